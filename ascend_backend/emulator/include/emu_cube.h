#pragma once
// emu_cube.h: op semantics of the emulator (placeholder, being written).
