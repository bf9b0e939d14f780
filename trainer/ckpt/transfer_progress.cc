#include "trainer/ckpt/transfer_progress.h"

#include <atomic>

namespace baton {

namespace {
std::atomic<TransferSink> g_sink{nullptr};
}  // namespace

void SetTransferSink(TransferSink sink) { g_sink.store(sink, std::memory_order_release); }

void NoteTransferred(uint64_t bytes) {
  if (TransferSink sink = g_sink.load(std::memory_order_acquire)) sink(bytes);
}

}  // namespace baton
