#pragma once
// Official include path of asc_assert; the emulator declares it in kernel_operator.h.
#include "../../kernel_operator.h"
