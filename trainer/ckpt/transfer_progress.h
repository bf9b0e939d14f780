// Transfer progress: checkpoint reads and writes (tensor_file_io.h) say how many bytes they have
// moved, so a long load or save can show it is alive (the rank's heartbeat, trainer/train/
// heartbeat.h, registers the sink). A sink must be cheap: it is called after every chunk.
// Process-wide; thread-safe (the sink is one atomic pointer).
#pragma once

#include <cstdint>

namespace baton {

using TransferSink = void (*)(uint64_t bytes);

// The function told about every chunk moved from now on; nullptr for none.
void SetTransferSink(TransferSink sink);
// `bytes` more were read or written.
void NoteTransferred(uint64_t bytes);

}  // namespace baton
