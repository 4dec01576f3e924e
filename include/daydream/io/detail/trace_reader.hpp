// Defines io::detail::trace_reader: the bytes of a trace (a plain file, gzip data or a string in memory) read in order, a buffer at a time.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_TRACE_READER_HPP
#define DAYDREAM_IO_DETAIL_TRACE_READER_HPP

#include <daydream/config.hpp>
#include <daydream/io/detail/trace_file.hpp>

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace daydream::io::detail {

/// The bytes of a trace, in order, whatever holds them: a plain file (read with
/// fread, never mapped nor held whole), a gzip file (inflated as it is read, every
/// member of a multi-member file) or a string in memory.
class trace_reader {
public:
  /// Opens a trace file. Gzip is recognised by its magic bytes (1f 8b), whatever the file
  /// is called; a file whose name ends in `.gz` without them is refused, as is an empty
  /// file or a directory. Throws daydream::error naming the file and the reason.
  static trace_reader open(const std::filesystem::path& path) {
    trace_reader r;
    r.what_ = path.string();
    r.file_.reset(std::fopen(r.what_.c_str(), "rb"));
    if (!r.file_) throw error("daydream: " + r.what_ + ": cannot open: " + std::strerror(errno));
    std::error_code ec;
    auto st = std::filesystem::status(path, ec);
    if (!ec && std::filesystem::is_directory(st)) throw error("daydream: " + r.what_ + ": is a directory, not a trace file");
    std::FILE* f = r.file_.get();
    std::size_t size = 0;
    if (std::fseek(f, 0, SEEK_END) == 0) {
      long pos = std::ftell(f);
      if (pos > 0) size = static_cast<std::size_t>(pos);
      std::fseek(f, 0, SEEK_SET);
    }
    char head[2] = {0, 0};
    const std::size_t got = std::fread(head, 1, 2, f);
    if (got == 0) throw error("daydream: " + r.what_ + ": empty file");
    r.gz_ = is_gzip({head, got});
    const auto name = path.filename().string();
    if (!r.gz_ && name.size() >= 3 && name.compare(name.size() - 3, 3, ".gz") == 0)
      throw error("daydream: " + r.what_ + ": the name ends in .gz but the file is not gzip data "
                  "(it does not start with the gzip magic bytes 1f 8b)");
    if (r.gz_) {
      // ISIZE, the uncompressed size modulo 2^32: a hint only.
      if (size >= 18) {
        r.size_hint_ = std::size_t(gzip_isize(f, size));
        if (r.size_hint_ < size) r.size_hint_ = size * 4;
        // Only the tables' first reservation follows it: a claim beyond 64:1 (Kineto JSON
        // compresses about 18:1; deflate allows 1032:1) is not believed, the tables grow.
        r.size_hint_ = std::min(r.size_hint_, size * 64);
      }
      std::fseek(f, 0, SEEK_SET);
      r.zs_ = std::make_unique<zstate>();
      if (inflateInit2(&r.zs_->z, 15 + 32) != Z_OK) {
        r.zs_.reset();
        throw error("daydream: " + r.what_ + ": cannot initialise zlib");
      }
      r.zs_->live = true;
      r.zs_->in = std::make_unique<unsigned char[]>(zchunk);
    } else {
      r.size_hint_ = size;
      std::memcpy(r.pending_, head, got);
      r.pending_size_ = got;
    }
    return r;
  }

  /// A reader of `text` (not copied: it must outlive the reader).
  static trace_reader of_memory(std::string_view text, std::string_view name) {
    trace_reader r;
    r.what_ = std::string(name);
    r.mem_ = text;
    r.size_hint_ = text.size();
    return r;
  }

  /// Reads up to `n` bytes into `p`; fewer only at the end of the input (0 then).
  /// Throws daydream::error on a read error and on corrupt or truncated gzip data.
  std::size_t read(char* p, std::size_t n) {
    std::size_t done = 0;
    if (file_ == nullptr) {
      done = std::min(n, mem_.size());
      if (done) std::memcpy(p, mem_.data(), done);
      mem_.remove_prefix(done);
    } else if (!gz_) {
      while (pending_size_ && done < n) { p[done++] = pending_[0]; pending_[0] = pending_[1]; --pending_size_; }
      while (done < n) {
        const std::size_t k = std::fread(p + done, 1, n - done, file_.get());
        done += k;
        if (k == 0) break;
      }
      if (std::ferror(file_.get())) throw error("daydream: " + what_ + ": read error: " + std::strerror(errno));
    } else {
      done = inflate_into(p, n);
      if (done == 0 && total_ == 0)
        throw error("daydream: " + what_ + ": empty file (no JSON inside the gzip data)");
    }
    total_ += done;
    return done;
  }

  /// The expected size of the text (the file's size; for gzip ISIZE within 64 times the
  /// file's size, or a guess), 0 if unknown.
  std::size_t size_hint() const noexcept { return size_hint_; }
  /// Bytes of text read so far.
  std::size_t bytes_read() const noexcept { return total_; }
  /// The size of the text: for compressed input, the rest is read (and dropped) to
  /// learn it; what cannot be read counts as the end.
  std::size_t size_to_end() {
    if (!gz_) return std::max(size_hint_, total_);
    char sink[1 << 14];
    try {
      while (read(sink, sizeof sink) > 0) {}
    } catch (const error&) {
      // Corrupt data after the place already reported: the end is where reading stopped.
    }
    return total_;
  }
  /// The name of the input in errors.
  const std::string& name() const noexcept { return what_; }
  /// Whether the input is gzip data.
  bool gzip() const noexcept { return gz_; }

private:
  trace_reader() = default;
  static constexpr std::size_t zchunk = 1 << 20;
  struct zstate {
    z_stream z{};
    bool live = false;
    bool ended = false; // the last member ended and nothing followed yet
    bool finished = false;
    std::size_t consumed = 0;
    std::unique_ptr<unsigned char[]> in;
    ~zstate() { if (live) inflateEnd(&z); }
  };

  std::size_t inflate_into(char* p, std::size_t n) {
    auto& s = *zs_;
    std::size_t produced = 0;
    while (produced < n && !s.finished) {
      if (s.z.avail_in == 0) {
        const std::size_t k = std::fread(s.in.get(), 1, zchunk, file_.get());
        if (std::ferror(file_.get())) throw error("daydream: " + what_ + ": read error: " + std::strerror(errno));
        if (k == 0) {
          if (!s.ended)
            throw error("daydream: " + what_ + ": truncated gzip data: the compressed stream ends after " +
                        std::to_string(s.consumed) + " bytes without its end marker");
          s.finished = true;
          break;
        }
        s.z.next_in = s.in.get();
        s.z.avail_in = static_cast<uInt>(k);
      }
      if (s.ended) {
        // Another gzip member may follow; anything else after a complete member (zero
        // padding written by some tools) is ignored, as gzip itself does.
        if (s.z.avail_in < 2 || s.z.next_in[0] != 0x1f || s.z.next_in[1] != 0x8b) { s.finished = true; break; }
        if (inflateReset(&s.z) != Z_OK) throw error("daydream: " + what_ + ": cannot reset zlib");
        s.ended = false;
      }
      s.z.next_out = reinterpret_cast<unsigned char*>(p + produced);
      s.z.avail_out = static_cast<uInt>(std::min<std::size_t>(n - produced, std::numeric_limits<uInt>::max()));
      const auto before_out = s.z.avail_out;
      const auto before_in = s.z.avail_in;
      const int rc = inflate(&s.z, Z_NO_FLUSH);
      produced += before_out - s.z.avail_out;
      s.consumed += before_in - s.z.avail_in;
      if (rc == Z_STREAM_END) { s.ended = true; continue; }
      if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR)
        throw error("daydream: " + what_ + ": corrupt gzip data after " + std::to_string(s.consumed) +
                    " compressed bytes (" + (s.z.msg ? s.z.msg : "zlib error") + ")");
    }
    return produced;
  }

  std::string what_;
  std::unique_ptr<std::FILE, file_closer> file_;
  std::string_view mem_;
  bool gz_ = false;
  char pending_[2] = {0, 0};
  std::size_t pending_size_ = 0;
  std::unique_ptr<zstate> zs_;
  std::size_t size_hint_ = 0, total_ = 0;
};

} // namespace daydream::io::detail

#endif
