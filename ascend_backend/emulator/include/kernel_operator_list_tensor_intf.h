#pragma once
// Official include of ListTensorDesc / TensorDesc; the emulator declares them in kernel_operator.h.
#include "kernel_operator.h"
