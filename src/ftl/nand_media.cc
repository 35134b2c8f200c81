#include "ftl/nand_media.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "hscommon/crc32c.h"
#include "hscommon/encoding.h"
#include "hsio/block_device.h"

namespace hybridstore::ftl {

namespace {

constexpr uint32_t kNandImageTag = 0x4e414e44;  // "NAND"
constexpr uint8_t kNandImageVersion = 1;
constexpr char kNandImageMagic[8] = {'H', 'S', 'N', 'A', 'N', 'D', 'I', 'M'};
constexpr uint64_t kHeaderBytes = 4096;
constexpr uint32_t kEntryBytes = 16;
constexpr uint32_t kEntryCrcSeed = 0x424c4b53;  // "BLKS"

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Stored bytes are the complement of the logical bytes (erased = 0 on disk).
void invert_copy(char* dst, const char* src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, src + i, 8);
    w = ~w;
    memcpy(dst + i, &w, 8);
  }
  for (; i < n; ++i) dst[i] = static_cast<char>(~static_cast<unsigned char>(src[i]));
}

std::string encode_header(const NandGeometry& g) {
  std::string body(kNandImageMagic, sizeof(kNandImageMagic));
  put_fixed32(&body, g.page_size);
  put_fixed32(&body, g.pages_per_block);
  put_fixed32(&body, g.oob_size);
  put_fixed32(&body, g.block_count);
  return seal_record(kNandImageTag, kNandImageVersion, body);
}

// The geometry in a flash file's first bytes (n of them read, or -1).
int decode_image_header(const std::string& path, const char* hdr, ssize_t n, NandGeometry* out,
                        std::string* error) {
  if (n < 16) {
    *error = fmt::format("{}: not a flash image (too short)", path);
    return -EINVAL;
  }
  // Find the record's length from its framing, then check it.
  Decoder d(std::string_view(hdr, static_cast<size_t>(n)));
  uint8_t ver;
  uint64_t len = 0;
  if (!d.get_u8(&ver) || !d.get_varint(&len) || len > 128 || len > d.remaining() ||
      d.remaining() - len < 4) {
    *error = fmt::format("{}: not a flash image (bad header framing)", path);
    return -EINVAL;
  }
  size_t total = static_cast<size_t>(n) - d.remaining() + len + 4;
  std::string_view body;
  RecordError re = open_record(kNandImageTag, kNandImageVersion,
                               std::string_view(hdr, total), &ver, &body);
  if (re != RecordError::kNone) {
    *error = fmt::format("{}: flash image header: {}", path, record_error_name(re));
    return record_errno(re);
  }
  Decoder b(body);
  std::string_view magic;
  NandGeometry g;
  if (!b.get_raw(sizeof(kNandImageMagic), &magic) ||
      memcmp(magic.data(), kNandImageMagic, sizeof(kNandImageMagic)) != 0 ||
      !b.get_fixed32(&g.page_size) || !b.get_fixed32(&g.pages_per_block) ||
      !b.get_fixed32(&g.oob_size) || !b.get_fixed32(&g.block_count)) {
    *error = fmt::format("{}: not a flash image (bad magic or body)", path);
    return -EINVAL;
  }
  std::string gerr;
  if (g.validate(&gerr) < 0) {
    *error = fmt::format("{}: flash image has an invalid geometry: {}", path, gerr);
    return -EINVAL;
  }
  *out = g;
  return 0;
}

}  // namespace

bool looks_like_flash_image(const std::string& path) {
  // Read-only and unlocked: a mounted store's flash file answers too.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char hdr[256];
  ssize_t n = pread(fd, hdr, sizeof(hdr), 0);
  close(fd);
  NandGeometry g;
  std::string ignored;
  return decode_image_header(path, hdr, n, &g, &ignored) == 0;
}

NandMedia::~NandMedia() {
  if (base_) munmap(base_, map_len_);
  if (fd_ >= 0) close(fd_);
}

int NandMedia::map(const std::string& path, int fd, const NandGeometry& g, bool fresh,
                   std::shared_ptr<NandMedia>* out, std::string* error) {
  std::shared_ptr<NandMedia> m(new NandMedia());
  m->geo_ = g;
  m->path_ = path;
  m->fd_ = fd;
  m->table_offset_ = kHeaderBytes;
  m->data_offset_ = kHeaderBytes + round_up(uint64_t(g.block_count) * kEntryBytes, 4096);
  m->map_len_ = m->data_offset_ + g.total_pages() * (g.page_size + g.oob_size);
  if (fd >= 0 && fresh && ftruncate(fd, static_cast<off_t>(m->map_len_)) != 0) {
    int e = errno;
    *error = fmt::format("{}: cannot size flash file: {}", path, strerror(e));
    return -e;
  }
  if (fd >= 0) {
    struct stat st;
    if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < m->map_len_) {
      *error = fmt::format("{}: flash file is shorter than its geometry says", path);
      return -EINVAL;
    }
  }
  int flags = fd >= 0 ? MAP_SHARED : (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
  void* p = mmap(nullptr, m->map_len_, PROT_READ | PROT_WRITE, flags, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    *error = fmt::format("{}: mmap of {} bytes failed: {}", path.empty() ? "memory" : path,
                         m->map_len_, strerror(e));
    return -e;
  }
  m->base_ = static_cast<char*>(p);
  if (fresh) {
    std::string h = encode_header(g);
    memcpy(m->base_, h.data(), h.size());
  }
  *out = std::move(m);
  return 0;
}

namespace {
// One FTL per flash file: a second one (another store naming the same image,
// or a tool) would keep its own map of the same pages. An open-file-
// description lock, so a second open in this process is refused too.
int lock_flash_file(int fd, const std::string& path, std::string* error) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_SETLK, &fl) == 0) return 0;
  const int e = errno;
  if (e == EAGAIN || e == EACCES) {
    *error = fmt::format("{}: flash file is in use by another store or process (it is locked)",
                         path_and_target(path));
    return -EBUSY;
  }
  *error = fmt::format("{}: cannot lock flash file: {}", path, strerror(e));
  return -e;
}
}  // namespace

int NandMedia::create_file(const std::string& path, const NandGeometry& g,
                           std::shared_ptr<NandMedia>* out, std::string* error) {
  if (int r = g.validate(error); r < 0) return r;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    *error = fmt::format("{}: cannot create flash file: {}", path, strerror(e));
    return -e;
  }
  if (int r = lock_flash_file(fd, path, error); r < 0) {
    close(fd);
    return r;
  }
  int r = map(path, fd, g, true, out, error);
  if (r < 0) {
    close(fd);
    unlink(path.c_str());
  }
  return r;
}

std::shared_ptr<NandMedia> NandMedia::create_memory(const NandGeometry& g) {
  std::string err;
  if (g.validate(&err) < 0) return nullptr;
  std::shared_ptr<NandMedia> m;
  if (map("", -1, g, true, &m, &err) < 0) return nullptr;
  return m;
}

int NandMedia::open_file(const std::string& path, std::shared_ptr<NandMedia>* out,
                         std::string* error) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    *error = fmt::format("{}: cannot open flash file: {}", path, strerror(e));
    return -e;
  }
  if (int r = lock_flash_file(fd, path, error); r < 0) {
    close(fd);
    return r;
  }
  char hdr[256];
  ssize_t n = pread(fd, hdr, sizeof(hdr), 0);
  NandGeometry g;
  if (int r = decode_image_header(path, hdr, n, &g, error); r < 0) {
    close(fd);
    return r;
  }
  int r = map(path, fd, g, false, out, error);
  if (r < 0) close(fd);
  return r;
}

char* NandMedia::page_ptr(uint32_t block, uint32_t page) const {
  uint64_t idx = uint64_t(block) * geo_.pages_per_block + page;
  return base_ + data_offset_ + idx * (geo_.page_size + geo_.oob_size);
}

void NandMedia::read(uint32_t block, uint32_t page, char* data, char* oob) const {
  const char* p = page_ptr(block, page);
  if (data) invert_copy(data, p, geo_.page_size);
  if (oob) invert_copy(oob, p + geo_.page_size, geo_.oob_size);
}

void NandMedia::write(uint32_t block, uint32_t page, const char* data, const char* oob) {
  char* p = page_ptr(block, page);
  if (data) invert_copy(p, data, geo_.page_size);
  if (oob) invert_copy(p + geo_.page_size, oob, geo_.oob_size);
}

void NandMedia::write_oob_byte(uint32_t block, uint32_t page, uint32_t index, uint8_t value) {
  page_ptr(block, page)[geo_.page_size + index] = static_cast<char>(~value);
}

void NandMedia::erase(uint32_t block) {
  char* start = page_ptr(block, 0);
  uint64_t len = uint64_t(geo_.pages_per_block) * (geo_.page_size + geo_.oob_size);
  uint64_t off = static_cast<uint64_t>(start - base_);
  // Anonymous memory: give the whole 4 KiB pages inside the block back and
  // zero the partial pages at the edges. A file is only zeroed: punching holes
  // would make every later program fault in and allocate file blocks again,
  // which costs journal commits on the host file system.
  uint64_t a = round_up(off, 4096);
  uint64_t b = (off + len) / 4096 * 4096;
  bool released = false;
  if (fd_ < 0 && b > a + 4096) released = madvise(base_ + a, b - a, MADV_DONTNEED) == 0;
  if (released) {
    memset(start, 0, a - off);
    memset(base_ + b, 0, off + len - b);
  } else {
    memset(start, 0, len);
  }
}

bool NandMedia::get_state(uint32_t block, NandBlockState* out) const {
  const char* e = base_ + table_offset_ + uint64_t(block) * kEntryBytes;
  static const char zero[kEntryBytes] = {};
  if (memcmp(e, zero, kEntryBytes) == 0) {
    *out = NandBlockState{};
    return true;
  }
  if (crc32c(kEntryCrcSeed, e, 12) != load_fixed32(e + 12)) return false;
  out->wear = load_fixed32(e);
  out->write_ptr = load_fixed32(e + 4);
  out->flags = load_fixed32(e + 8);
  return true;
}

void NandMedia::set_state(uint32_t block, const NandBlockState& s) {
  char e[kEntryBytes];
  store_fixed32(e, s.wear);
  store_fixed32(e + 4, s.write_ptr);
  store_fixed32(e + 8, s.flags);
  store_fixed32(e + 12, crc32c(kEntryCrcSeed, e, 12));
  memcpy(base_ + table_offset_ + uint64_t(block) * kEntryBytes, e, kEntryBytes);
}

int NandMedia::sync() {
  if (fd_ < 0) return 0;
  if (msync(base_, map_len_, MS_SYNC) != 0) return -errno;
  return 0;
}

}  // namespace hybridstore::ftl
