#pragma once
// emu_vector.h: op semantics of the emulator (placeholder, being written).
