#include "trainer/ckpt/tensor_file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
// After xxhash.h: XXH3 calls go to the widest SIMD variant this CPU has, chosen at run time.
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "trainer/ckpt/transfer_progress.h"

namespace baton {

namespace {

// Bytes per write or read: large enough that the syscalls cost nothing, small enough that the
// hash reads what the copy just touched while it is still in the cache.
constexpr size_t kChunk = size_t(4) << 20;

struct Hasher {
  XXH3_state_t* s = XXH3_createState();
  uint64_t bytes = 0;
  Hasher() { XXH3_64bits_reset(s); }
  ~Hasher() { XXH3_freeState(s); }
  void Update(const void* p, size_t n) {
    XXH3_64bits_update(s, p, n);
    bytes += n;
  }
  FileDigest Digest() const { return {bytes, Xxh3Hex(XXH3_64bits_digest(s))}; }
};

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

bool WriteAll(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min(n, kChunk));
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= size_t(w);
  }
  return true;
}

// Reads exactly n bytes at `offset`; false on an error or a short file (errno 0 then).
bool ReadAll(int fd, uint8_t* p, size_t n, uint64_t offset) {
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, off_t(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (r == 0) {
      errno = 0;
      return false;
    }
    p += r;
    n -= size_t(r);
    offset += uint64_t(r);
  }
  return true;
}

uint64_t Bytes(const StTensorRef& t) {
  uint64_t n = StDTypeSize(t.dtype);
  for (int64_t d : t.shape) n *= uint64_t(d);
  return n;
}

}  // namespace

std::string Xxh3Hex(uint64_t hash) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016" PRIx64, hash);
  return hex;
}

Result<FileDigest> WriteHashedSafetensors(const std::string& path,
                                          const std::vector<StTensorRef>& tensors,
                                          const std::map<std::string, std::string>& metadata,
                                          const AfterChunk& after_chunk) {
  Result<std::string> header = SafetensorsHeader(path, tensors, metadata);
  if (!header.ok()) return header.status();
  const std::string& text = *header;
  const uint64_t len = text.size();

  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return Status::Io(path + ": cannot create: " + std::strerror(errno));
  auto failed = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    ::close(fd.release());
    ::unlink(path.c_str());
    return Status::Io(path + ": " + what + ": " + why);
  };
  Hasher h;
  uint8_t len_bytes[8];
  std::memcpy(len_bytes, &len, 8);  // little-endian hosts only, as the reader
  h.Update(len_bytes, 8);
  h.Update(text.data(), text.size());
  if (!WriteAll(fd.get(), len_bytes, 8) ||
      !WriteAll(fd.get(), reinterpret_cast<const uint8_t*>(text.data()), text.size())) {
    return failed("write of the header failed");
  }
  // Writeback of each chunk starts once it is written, so the disk works while the next chunks
  // are hashed and copied, and the final fsync waits only for the tail.
  uint64_t at = 8 + len;
  uint64_t since = 0;  // bytes written since after_chunk last saw them
  for (const auto& t : tensors) {
    const auto* p = static_cast<const uint8_t*>(t.data);
    for (uint64_t done = 0, n = Bytes(t); done < n;) {
      const size_t k = size_t(std::min<uint64_t>(kChunk, n - done));
      h.Update(p + done, k);
      if (!WriteAll(fd.get(), p + done, k))
        return failed("write of tensor '" + t.name + "' failed");
      ::sync_file_range(fd.get(), off_t(at), off_t(k), SYNC_FILE_RANGE_WRITE);
      NoteTransferred(k);
      at += k;
      done += k;
      since += k;
      if (since >= kChunk && after_chunk && !after_chunk(std::exchange(since, 0))) {
        ::close(fd.release());
        ::unlink(path.c_str());
        return Status::Io(path + ": cancelled");
      }
    }
  }
  if (after_chunk && !after_chunk(since)) {  // the file's last, shorter write
    ::close(fd.release());
    ::unlink(path.c_str());
    return Status::Io(path + ": cancelled");
  }
  if (::fsync(fd.get()) != 0) return failed("fsync failed");
  NoteTransferred(0);  // the fsync can take long: done with it is progress too
  if (::close(fd.release()) != 0) {
    ::unlink(path.c_str());
    return Status::Io(path + ": close failed: " + std::strerror(errno));
  }
  return h.Digest();
}

namespace {

// A piece of a file read in one pread: into `into`, or (nullptr) through the hashing thread's
// scratch buffer.
struct ReadChunk {
  uint64_t begin = 0;
  size_t size = 0;
  uint8_t* into = nullptr;
};

// The file's bytes in order, cut into chunks of at most kReadChunk: small enough that the hash
// finds a chunk still in the cache after the copy, large enough that a pread costs nothing.
constexpr size_t kReadChunk = size_t(1) << 20;

void AddChunks(uint64_t begin, uint64_t end, uint8_t* into, std::vector<ReadChunk>& out) {
  while (begin < end) {
    const size_t k = size_t(std::min<uint64_t>(kReadChunk, end - begin));
    out.push_back({begin, k, into});
    begin += k;
    if (into != nullptr) into += k;
  }
}

Status ReadError(const std::string& path, uint64_t at, int err) {
  return Status::Io(
      path + ": read failed at byte " + std::to_string(at) + ": " +
      (err == 0 ? std::string("the file is shorter than it was") : std::strerror(err)));
}

// Reads the chunks that have a destination on `threads` threads (the caller's among them) and
// hashes every chunk in file order on the caller's thread, which reads the scratch chunks itself
// and helps with the reads whenever the next chunk to hash is not there yet. The copy out of the
// page cache is most of a warm load's work, so it is what gets spread; the hash stays one
// sequential stream.
class ParallelReader {
 public:
  ParallelReader(int fd, const std::string& path, std::vector<ReadChunk> chunks)
      : fd_(fd), path_(path), chunks_(std::move(chunks)), done_(chunks_.size()) {
    for (size_t i = 0; i < chunks_.size(); ++i) {
      if (chunks_[i].into != nullptr) claimable_.push_back(i);
    }
  }

  Status Run(int threads, Hasher& h) {
    std::vector<std::thread> workers;
    for (int t = 1; t < threads && size_t(t) < claimable_.size(); ++t) {
      workers.emplace_back([this] {
        while (ReadNextClaim()) {
        }
      });
    }
    std::unique_ptr<uint8_t[]> scratch(new uint8_t[kReadChunk]);
    Status st = Status::Ok();
    for (size_t i = 0; i < chunks_.size() && st.ok(); ++i) {
      const ReadChunk& c = chunks_[i];
      if (c.into == nullptr) {
        if (!ReadAll(fd_, scratch.get(), c.size, c.begin)) {
          st = ReadError(path_, c.begin, errno);
          break;
        }
        h.Update(scratch.get(), c.size);
        NoteTransferred(c.size);
        continue;
      }
      while (!done_[i].load(std::memory_order_acquire)) {
        if (ReadNextClaim()) continue;  // help rather than wait
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return done_[i].load(std::memory_order_acquire) || failed_; });
        if (failed_) break;
      }
      if (!done_[i].load(std::memory_order_acquire)) break;  // a read failed
      h.Update(c.into, c.size);
      NoteTransferred(c.size);
    }
    stop_.store(true);
    for (auto& w : workers) w.join();
    if (st.ok() && failed_) st = error_;
    return st;
  }

 private:
  // Reads the next unclaimed chunk; false when none is left or a read failed.
  bool ReadNextClaim() {
    if (stop_.load()) return false;
    const size_t k = next_.fetch_add(1);
    if (k >= claimable_.size()) return false;
    const size_t i = claimable_[k];
    const ReadChunk& c = chunks_[i];
    if (!ReadAll(fd_, c.into, c.size, c.begin)) {
      const int err = errno;
      std::lock_guard<std::mutex> lock(mu_);
      if (!failed_) error_ = ReadError(path_, c.begin, err);
      failed_ = true;
      stop_.store(true);
      cv_.notify_all();
      return false;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_[i].store(true, std::memory_order_release);
    }
    cv_.notify_all();
    return true;
  }

  int fd_;
  const std::string& path_;
  std::vector<ReadChunk> chunks_;
  std::vector<size_t> claimable_;  // indices of the chunks with a destination, in file order
  std::vector<std::atomic<bool>> done_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool failed_ = false;  // guarded by mu_
  Status error_ = Status::Ok();
};

}  // namespace

Result<FileDigest> ReadHashedSafetensors(const SafetensorsFile& file, const TensorDestination& dest,
                                         int threads) {
  const std::string& path = file.path();
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return Status::Io(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status::Io(path + ": not a regular file any more");
  }
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  const uint64_t size = uint64_t(st.st_size);
  uint8_t len_bytes[8];
  if (!ReadAll(fd.get(), len_bytes, 8, 0)) return Status::Io(path + ": cannot read the header");
  uint64_t len = 0;
  std::memcpy(&len, len_bytes, 8);
  const uint64_t data = 8 + len;  // Open checked it against the size
  std::vector<const StTensorInfo*> order;
  for (const auto& t : file.tensors()) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const StTensorInfo* a, const StTensorInfo* b) { return a->begin < b->begin; });
  // The header, any gap and any tensor without a destination go through the scratch buffer.
  std::vector<ReadChunk> chunks;
  uint64_t at = 0;
  for (const StTensorInfo* t : order) {
    AddChunks(at, data + t->begin, nullptr, chunks);
    auto* into = static_cast<uint8_t*>(t->end > t->begin ? dest(*t) : nullptr);
    AddChunks(data + t->begin, data + t->end, into, chunks);
    at = data + t->end;
  }
  AddChunks(at, size, nullptr, chunks);
  Hasher h;
  ParallelReader reader(fd.get(), path, std::move(chunks));
  if (Status s = reader.Run(std::max(1, threads), h); !s.ok()) return s;
  return h.Digest();
}

}  // namespace baton
