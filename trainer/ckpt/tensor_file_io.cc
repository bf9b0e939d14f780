#include "trainer/ckpt/tensor_file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <memory>
#include <utility>

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
  if (::close(fd.release()) != 0) {
    ::unlink(path.c_str());
    return Status::Io(path + ": close failed: " + std::strerror(errno));
  }
  return h.Digest();
}

Result<FileDigest> ReadHashedSafetensors(const SafetensorsFile& file,
                                         const TensorDestination& dest) {
  const std::string& path = file.path();
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return Status::Io(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status::Io(path + ": not a regular file any more");
  }
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  const uint64_t size = uint64_t(st.st_size);
  std::unique_ptr<uint8_t[]> scratch(new uint8_t[kChunk]);
  Hasher h;
  uint64_t at = 0;
  // Bytes [at, to) into `into` (nullptr: through the scratch buffer), hashed chunk by chunk.
  auto read = [&](uint64_t to, uint8_t* into) -> Status {
    while (at < to) {
      const size_t k = size_t(std::min<uint64_t>(kChunk, to - at));
      uint8_t* p = into != nullptr ? into : scratch.get();
      if (!ReadAll(fd.get(), p, k, at)) {
        return Status::Io(
            path + ": read failed at byte " + std::to_string(at) + ": " +
            (errno == 0 ? std::string("the file is shorter than it was") : std::strerror(errno)));
      }
      h.Update(p, k);
      if (into != nullptr) into += k;
      at += k;
    }
    return Status::Ok();
  };
  uint8_t len_bytes[8];
  if (!ReadAll(fd.get(), len_bytes, 8, 0)) return Status::Io(path + ": cannot read the header");
  uint64_t len = 0;
  std::memcpy(&len, len_bytes, 8);
  const uint64_t data = 8 + len;  // Open checked it against the size
  if (Status s = read(data, nullptr); !s.ok()) return s;
  std::vector<const StTensorInfo*> order;
  for (const auto& t : file.tensors()) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const StTensorInfo* a, const StTensorInfo* b) { return a->begin < b->begin; });
  for (const StTensorInfo* t : order) {
    if (Status s = read(data + t->begin, nullptr); !s.ok()) return s;  // a gap, if any
    auto* into = static_cast<uint8_t*>(t->end > t->begin ? dest(*t) : nullptr);
    if (Status s = read(data + t->end, into); !s.ok()) return s;
  }
  if (Status s = read(size, nullptr); !s.ok()) return s;
  return h.Digest();
}

}  // namespace baton
