#pragma once
// emu_types.h: op semantics of the emulator (placeholder, being written).
