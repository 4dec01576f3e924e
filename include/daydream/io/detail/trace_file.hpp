// Defines io::detail::padded_buffer and read_trace_file: a trace file (plain or gzip) read into one padded buffer (load_kineto streams instead: kineto_stream.hpp).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_TRACE_FILE_HPP
#define DAYDREAM_IO_DETAIL_TRACE_FILE_HPP

#include <daydream/config.hpp>

#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#if defined(__unix__) || defined(__APPLE__)
#  include <fcntl.h>    // open
#  include <sys/mman.h> // mmap: a plain trace is read in place, without a copy
#  include <unistd.h>   // close, sysconf
#  define DAYDREAM_IO_HAVE_MMAP 1
#endif

namespace daydream::io::detail {

/// A growable byte buffer that always keeps simdjson's padding readable (and zeroed)
/// after its contents, so the parser can run on it in place: the only copy of the
/// trace text in memory.
class padded_buffer {
public:
  padded_buffer() = default;
  padded_buffer(const padded_buffer&) = delete;
  padded_buffer& operator=(const padded_buffer&) = delete;
  padded_buffer(padded_buffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), size_(std::exchange(o.size_, 0)), cap_(std::exchange(o.cap_, 0)),
        mapped_(std::exchange(o.mapped_, 0)) {}
  padded_buffer& operator=(padded_buffer&& o) noexcept {
    std::swap(p_, o.p_); std::swap(size_, o.size_); std::swap(cap_, o.cap_); std::swap(mapped_, o.mapped_);
    return *this;
  }
  ~padded_buffer() { release(); }

  /// Makes room for `n` bytes of contents (plus padding), keeping the current ones.
  void reserve(std::size_t n) {
    if (mapped_) throw std::bad_alloc(); // a mapped file is read-only and never grows
    if (n > std::numeric_limits<std::size_t>::max() - simdjson::SIMDJSON_PADDING) throw std::bad_alloc();
    const std::size_t need = n + simdjson::SIMDJSON_PADDING;
    if (need <= cap_) return;
    auto* q = static_cast<char*>(std::realloc(p_, need));
    if (!q) throw std::bad_alloc();
    p_ = q;
    cap_ = need;
  }
  /// Sets the size (within the reserved room) and zeroes the padding after it.
  void set_size(std::size_t n) noexcept {
    size_ = n;
    std::memset(p_ + n, 0, cap_ - n < simdjson::SIMDJSON_PADDING ? cap_ - n : simdjson::SIMDJSON_PADDING);
  }
  char* data() noexcept { return p_; }
  const char* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return cap_ > simdjson::SIMDJSON_PADDING ? cap_ - simdjson::SIMDJSON_PADDING : 0; }
  std::string_view view() const noexcept { return {p_ ? p_ : "", size_}; }
  /// The contents as simdjson input (padding included).
  simdjson::padded_string_view padded() const noexcept { return simdjson::padded_string_view(p_, size_, cap_); }
  /// The first `n` bytes of the room (n <= capacity()) as simdjson input: the bytes
  /// after them, up to the end of the room, are the padding.
  simdjson::padded_string_view padded_prefix(std::size_t n) const noexcept {
    return simdjson::padded_string_view(p_, n, cap_);
  }

  /// A buffer holding a copy of `s` (tests and parse_kineto on a string).
  static padded_buffer copy_of(std::string_view s) {
    padded_buffer b;
    b.reserve(s.size());
    if (!s.empty()) std::memcpy(b.p_, s.data(), s.size());
    b.set_size(s.size());
    return b;
  }

#ifdef DAYDREAM_IO_HAVE_MMAP
  /// Maps `size` bytes of the open file `fd` read-only, followed by zeroed padding
  /// (an anonymous mapping reserves the whole range; the file is mapped over its start).
  /// Returns an empty buffer if mapping fails, so the caller can read the file instead.
  static padded_buffer map_file(int fd, std::size_t size) {
    padded_buffer b;
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t total = (size + simdjson::SIMDJSON_PADDING + page - 1) / page * page;
    void* area = ::mmap(nullptr, total, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED) return b;
    int flags = MAP_PRIVATE | MAP_FIXED;
#  ifdef MAP_POPULATE
    flags |= MAP_POPULATE;
#  endif
    void* file = ::mmap(area, size, PROT_READ, flags, fd, 0);
    if (file == MAP_FAILED) { ::munmap(area, total); return b; }
    b.p_ = static_cast<char*>(area);
    b.size_ = size;
    b.cap_ = total;
    b.mapped_ = 1;
    return b;
  }
#endif

private:
  void release() noexcept {
#ifdef DAYDREAM_IO_HAVE_MMAP
    if (mapped_) { if (p_) ::munmap(p_, cap_); p_ = nullptr; return; }
#endif
    std::free(p_);
    p_ = nullptr;
  }

  char* p_ = nullptr;
  std::size_t size_ = 0, cap_ = 0;
  int mapped_ = 0;
};

//! @cond DAYDREAM_INTERNAL
struct file_closer {
  void operator()(std::FILE* f) const noexcept { if (f) std::fclose(f); }
};
//! @endcond

/// Whether `head` starts with the gzip magic bytes 1f 8b.
inline bool is_gzip(std::string_view head) noexcept {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
         static_cast<unsigned char>(head[1]) == 0x8b;
}

/// ISIZE of the gzip file `f` of `size` bytes: its last 4 bytes, the uncompressed size
/// of its last member modulo 2^32 (a hint only: a multi-member file, a file over 4 GiB, a
/// corrupt or hostile one); 0 when the file is too short or cannot be read there. Moves
/// the file's position.
inline std::uint64_t gzip_isize(std::FILE* f, std::uint64_t size) noexcept {
  unsigned char t[4];
  if (size < 18 || std::fseek(f, -4, SEEK_END) != 0 || std::fread(t, 1, 4, f) != 4) return 0;
  return std::uint64_t(t[0]) | std::uint64_t(t[1]) << 8 | std::uint64_t(t[2]) << 16 | std::uint64_t(t[3]) << 24;
}

/// Inflates gzip data (all members of a multi-member file) into `out`, reading the
/// compressed bytes with `read(buf, n) -> bytes read`. `size_hint` presizes the output.
/// Throws daydream::error naming `what` on corrupt or truncated data.
template <class Read>
void inflate_gzip(Read&& read, padded_buffer& out, std::size_t size_hint, const std::string& what) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw error("daydream: " + what + ": cannot initialise zlib");
  struct guard { z_stream* z; ~guard() { inflateEnd(z); } } g{&zs};
  constexpr std::size_t chunk = 1 << 20;
  auto in = std::unique_ptr<unsigned char[]>(new unsigned char[chunk]);
  out.reserve(size_hint > 0 ? size_hint : chunk);
  std::size_t produced = 0;
  bool ended = false; // the last member ended exactly at the end of the input
  std::size_t consumed_total = 0;
  for (;;) {
    if (zs.avail_in == 0) {
      std::size_t n = read(reinterpret_cast<char*>(in.get()), chunk);
      if (n == 0) break;
      zs.next_in = in.get();
      zs.avail_in = static_cast<uInt>(n);
    }
    if (ended) {
      // Another gzip member may follow; anything else after a complete member (zero
      // padding written by some tools) is ignored, as gzip itself does.
      if (zs.avail_in < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b) break;
      if (inflateReset(&zs) != Z_OK) throw error("daydream: " + what + ": cannot reset zlib");
      ended = false;
    }
    if (out.capacity() - produced < chunk) out.reserve(out.capacity() + out.capacity() / 2 + chunk);
    zs.next_out = reinterpret_cast<unsigned char*>(out.data() + produced);
    zs.avail_out = static_cast<uInt>(std::min<std::size_t>(out.capacity() - produced, std::numeric_limits<uInt>::max()));
    const auto before_out = zs.avail_out;
    const auto before_in = zs.avail_in;
    int rc = inflate(&zs, Z_NO_FLUSH);
    produced += before_out - zs.avail_out;
    consumed_total += before_in - zs.avail_in;
    if (rc == Z_STREAM_END) { ended = true; continue; }
    if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR) {
      throw error("daydream: " + what + ": corrupt gzip data after " + std::to_string(consumed_total) +
                  " compressed bytes (" + (zs.msg ? zs.msg : "zlib error") + ")");
    }
  }
  if (!ended)
    throw error("daydream: " + what + ": truncated gzip data: the compressed stream ends after " +
                std::to_string(consumed_total) + " bytes without its end marker");
  out.set_size(produced);
}

/// Reads a trace file into one padded buffer. Gzip is recognised by its magic bytes
/// (1f 8b), whatever the file is called, and inflated straight into the buffer; a file
/// whose name ends in `.gz` without the magic bytes is refused, as is an empty file.
/// Throws daydream::error naming the file and the reason.
inline padded_buffer read_trace_file(const std::filesystem::path& path) {
  const std::string what = path.string();
  std::unique_ptr<std::FILE, file_closer> f(std::fopen(what.c_str(), "rb"));
  if (!f) throw error("daydream: " + what + ": cannot open: " + std::strerror(errno));
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::is_directory(st)) throw error("daydream: " + what + ": is a directory, not a trace file");
  std::size_t size = 0;
  if (std::fseek(f.get(), 0, SEEK_END) == 0) {
    long pos = std::ftell(f.get());
    if (pos > 0) size = static_cast<std::size_t>(pos);
    std::fseek(f.get(), 0, SEEK_SET);
  }
  char head[2] = {0, 0};
  std::size_t got = std::fread(head, 1, 2, f.get());
  if (got == 0) throw error("daydream: " + what + ": empty file");
  const bool gz = is_gzip({head, got});
  const auto name = path.filename().string();
  if (!gz && name.size() >= 3 && name.compare(name.size() - 3, 3, ".gz") == 0)
    throw error("daydream: " + what + ": the name ends in .gz but the file is not gzip data "
                "(it does not start with the gzip magic bytes 1f 8b)");
  padded_buffer buf;
  if (gz) {
    // ISIZE, the last 4 bytes of a gzip member: the uncompressed size modulo 2^32.
    std::size_t hint = 0;
    if (size >= 18 && std::fseek(f.get(), -4, SEEK_END) == 0) {
      unsigned char t[4];
      if (std::fread(t, 1, 4, f.get()) == 4)
        hint = std::size_t(t[0]) | std::size_t(t[1]) << 8 | std::size_t(t[2]) << 16 | std::size_t(t[3]) << 24;
      // Larger than 4 GiB, or a multi-member file: ISIZE is only a lower bound.
      if (hint < size) hint = size * 4;
      // ISIZE is the file's word, not a fact: deflate expands at most 1032:1, so a
      // larger claim (a corrupt or hostile file) must not reserve that much memory.
      hint = std::min(hint, size * 1032);
    }
    std::fseek(f.get(), 0, SEEK_SET);
    auto* fp = f.get();
    inflate_gzip([fp](char* p, std::size_t n) { return std::fread(p, 1, n, fp); }, buf,
                 hint + 1, what);
    if (std::ferror(fp)) throw error("daydream: " + what + ": read error: " + std::strerror(errno));
  } else {
#ifdef DAYDREAM_IO_HAVE_MMAP
    if (size > (std::size_t(1) << 20)) {
      const int fd = ::open(what.c_str(), O_RDONLY);
      if (fd >= 0) {
        auto mapped = padded_buffer::map_file(fd, size);
        ::close(fd);
        if (mapped.size() == size) return mapped;
      }
    }
#endif
    buf.reserve(size);
    std::memcpy(buf.data(), head, got);
    std::size_t have = got;
    for (;;) {
      if (buf.capacity() - have < (1 << 16)) buf.reserve(buf.capacity() + buf.capacity() / 2 + (1 << 20));
      std::size_t n = std::fread(buf.data() + have, 1, buf.capacity() - have, f.get());
      have += n;
      if (n == 0) break;
    }
    if (std::ferror(f.get())) throw error("daydream: " + what + ": read error: " + std::strerror(errno));
    buf.set_size(have);
  }
  if (buf.size() == 0) throw error("daydream: " + what + ": empty file (no JSON inside the gzip data)");
  return buf;
}

} // namespace daydream::io::detail

#endif
