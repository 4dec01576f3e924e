// Defines io::detail::sqlite_db and sqlite_query: a read-only SQLite database and its prepared queries, for the Nsight Systems reader.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_NSYS_SQLITE_HPP
#define DAYDREAM_IO_DETAIL_NSYS_SQLITE_HPP

#include <daydream/config.hpp>

#include <sqlite3.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL
class sqlite_db;

/// One prepared statement: step() through its rows and read their columns. A NULL
/// reads as 0 (integers) or an empty string (text); null() tells them apart.
class sqlite_query {
public:
  sqlite_query(const sqlite_db& db, const std::string& sql);
  sqlite_query(const sqlite_query&) = delete;
  sqlite_query& operator=(const sqlite_query&) = delete;
  ~sqlite_query() { sqlite3_finalize(stmt_); }

  /// Binds text to parameter `k` (1-based).
  void bind(int k, std::string_view text) {
    sqlite3_bind_text(stmt_, k, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  /// Moves to the next row; false after the last. Throws daydream::error when the
  /// database cannot be read (corrupt pages, a truncated file).
  bool step();
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  /// Whether the column holds an integer (not text, a real or NULL).
  bool is_integer(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_INTEGER; }
  /// The text of a column (valid until the next step).
  std::string_view text(int col) const {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    if (!p) return {};
    return {p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))};
  }

private:
  const sqlite_db& db_;
  sqlite3_stmt* stmt_ = nullptr;
};

/// A SQLite database opened read-only; errors name `source`.
class sqlite_db {
public:
  sqlite_db(const std::string& path, std::string source) : source_(std::move(source)) {
    const int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      db_ = nullptr;
      throw error("daydream: " + source_ + ": cannot open the SQLite database: " + why);
    }
  }
  /// A database held in memory (`bytes`, a copy of a database file), read-only.
  struct in_memory_t {};
  sqlite_db(in_memory_t, std::string_view bytes, std::string source) : source_(std::move(source)) {
    if (sqlite3_open_v2(":memory:", &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw error("daydream: " + source_ + ": cannot open an in-memory SQLite database");
    }
    auto* copy = static_cast<unsigned char*>(sqlite3_malloc64(bytes.size() ? bytes.size() : 1));
    if (!copy) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw error("daydream: " + source_ + ": out of memory");
    }
    if (!bytes.empty()) std::memcpy(copy, bytes.data(), bytes.size());
    const auto n = static_cast<sqlite3_int64>(bytes.size());
    // FREEONCLOSE: SQLite owns the copy from here, also when this fails.
    if (sqlite3_deserialize(db_, "main", copy, n, n, SQLITE_DESERIALIZE_READONLY | SQLITE_DESERIALIZE_FREEONCLOSE) !=
        SQLITE_OK) {
      std::string why = sqlite3_errmsg(db_);
      sqlite3_close(db_);
      db_ = nullptr;
      throw error("daydream: " + source_ + ": cannot read the SQLite database: " + why);
    }
  }
  sqlite_db(const sqlite_db&) = delete;
  sqlite_db& operator=(const sqlite_db&) = delete;
  ~sqlite_db() { sqlite3_close(db_); }

  sqlite3* handle() const noexcept { return db_; }
  const std::string& source() const noexcept { return source_; }

  /// Throws daydream::error naming the source, `what` and SQLite's message.
  [[noreturn]] void fail(const std::string& what) const {
    throw error("daydream: " + source_ + ": " + what + ": " + sqlite3_errmsg(db_));
  }

  /// The names of the tables (and views) of the database; reading them is the first
  /// access to its pages, so a file that is not a database fails here.
  std::set<std::string> tables() const {
    std::set<std::string> out;
    sqlite_query q(*this, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')");
    while (q.step()) out.emplace(q.text(0));
    return out;
  }

  /// The column names of `table` (which must exist).
  std::set<std::string> columns(const std::string& table) const {
    std::set<std::string> out;
    sqlite_query q(*this, "SELECT name FROM pragma_table_info(?1)");
    q.bind(1, table);
    while (q.step()) out.emplace(q.text(0));
    return out;
  }

private:
  std::string source_;
  sqlite3* db_ = nullptr;
};

inline sqlite_query::sqlite_query(const sqlite_db& db, const std::string& sql) : db_(db) {
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr) != SQLITE_OK) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    db.fail("cannot read it as an Nsight Systems export (query \"" + sql.substr(0, 80) + "\")");
  }
}

inline bool sqlite_query::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail("cannot read the database");
}
//! @endcond

} // namespace daydream::io::detail

#endif
