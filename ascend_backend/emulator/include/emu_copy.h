#pragma once
// emu_copy.h: op semantics of the emulator (placeholder, being written).
