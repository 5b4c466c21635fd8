#pragma once
// Official include path of asc_printf; the emulator declares it in kernel_operator.h.
#include "../../kernel_operator.h"
