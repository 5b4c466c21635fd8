#pragma once
// kernel_operator.h: what kernels include. Clean-room CPU emulator of the Ascend C API
// subset used by tilelang-ascendc (see docs/emulator.md). Include order is part of the
// contract in docs/emulator-internals.md.
// The emulator's types and inline functions keep default visibility (kernels are compiled with
// -fvisibility=hidden, cache.KERNEL_FLAGS): their typeinfo and inline statics are shared with the
// runtime library, which catches the exceptions kernel code throws.
#pragma GCC visibility push(default)
#include "emu_types.h"
#include "emu_dtypes.h"
#include "emu_core.h"
#include "emu_copy.h"
#include "emu_cube.h"
#include "emu_vector.h"
#include "emu_vector_ext.h"
#include "emu_sync_ext.h"
#include "emu_cube_ext.h"
#include "emu_copy_ext.h"
#include "emu_entry.h"
#include "emu_list_tensor.h"
#include "emu_simt.h"
#include "emu_reg.h"
#pragma GCC visibility pop
