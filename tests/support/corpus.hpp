// Finds the real traces the tests read: the corpus bundled with the source tree (always) and extra traces (when present).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_CORPUS_HPP
#define DAYDREAM_TESTS_SUPPORT_CORPUS_HPP

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::testing {

/// The folders of the bundled corpus, in the source tree the test was built from:
/// `tests/data` (the curated real traces, tests/data/SOURCES.md) and `examples/traces`
/// (the traces the examples use; no file is in both).
inline std::vector<std::filesystem::path> bundled_roots() {
  const std::filesystem::path src = DAYDREAM_SOURCE_DIR;
  return {src / "tests" / "data", src / "examples" / "traces"};
}

/// The bundled trace `rel` (a path under one of bundled_roots(), e.g.
/// "param_dlrm_8rank_v100/worker1_step_12.1694128201556.pt.trace.json.gz"). Throws
/// std::runtime_error naming every place it looked when it is not there: a test whose
/// bundled input is missing fails.
inline std::filesystem::path bundled(std::string_view rel) {
  std::string looked;
  for (auto& root : bundled_roots()) {
    auto p = root / std::filesystem::path(rel);
    if (std::filesystem::is_regular_file(p)) return p;
    looked += (looked.empty() ? "" : ", ") + p.string();
  }
  throw std::runtime_error("bundled trace missing: " + looked);
}

/// The bundled 8-rank DLRM job on V100s, as load_job takes it: rank 0's trace (bundled with
/// the examples) and the folder of ranks 1-7 (tests/data). Throws when the folder is
/// missing: a test whose bundled input is missing fails.
inline std::vector<std::filesystem::path> dlrm_8rank_job() {
  std::vector<std::filesystem::path> v{bundled("dlrm_v100_rank0.json.gz"),
                                       std::filesystem::path(DAYDREAM_SOURCE_DIR) / "tests" / "data" /
                                           "param_dlrm_8rank_v100"};
  if (!std::filesystem::is_directory(v[1])) throw std::runtime_error("bundled job missing: " + v[1].string());
  return v;
}

/// Where extra real traces are, beyond the bundled corpus: the folder named by the
/// environment variable DAYDREAM_EXTRA_TRACES when it is set (empty: none; a name that is
/// not a folder throws, since the run asked for it), else `../shared/traces` beside the
/// source tree when that exists (a checkout inside the project's workspace), else none
/// (a fresh clone).
inline std::optional<std::filesystem::path> extra_root() {
  if (const char* env = std::getenv("DAYDREAM_EXTRA_TRACES")) {
    if (*env == '\0') return std::nullopt;
    std::filesystem::path p = env;
    if (!std::filesystem::is_directory(p))
      throw std::runtime_error(std::string("DAYDREAM_EXTRA_TRACES names no folder: ") + env);
    return p;
  }
  std::filesystem::path shared = DAYDREAM_SHARED_TRACES;
  if (std::filesystem::is_directory(shared)) return shared;
  return std::nullopt;
}

/// The Kineto traces under `root` (recursively), sorted: every `.json` / `.json.gz`
/// except PyTorch Execution Traces (the `et/` folders and `*_et.json*` files), which
/// are a different format, and the manifests of before/after pairs (`pairs.json`,
/// docs/validation.md).
inline std::vector<std::filesystem::path> kineto_traces(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::exists(root)) return out;
  for (auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    auto p = e.path();
    auto name = p.filename().string();
    bool json = name.size() > 5 && (name.ends_with(".json") || name.ends_with(".json.gz"));
    if (!json) continue;
    if (p.parent_path().filename() == "et" || name.find("_et.") != std::string::npos) continue;
    if (name == "pairs.json") continue;
    out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// One trace of the corpus: its file and the name it is shown by (relative to its root,
/// prefixed with `extra:` for the extra traces).
struct corpus_trace {
  std::filesystem::path file;
  std::string name;
  bool bundled = true;
};

/// Every Kineto trace of the bundled corpus.
inline std::vector<corpus_trace> bundled_corpus() {
  std::vector<corpus_trace> out;
  for (auto& root : bundled_roots())
    for (auto& f : kineto_traces(root)) out.push_back({f, std::filesystem::relative(f, root).string(), true});
  return out;
}

/// Whether the environment variable DAYDREAM_SKIP_BUNDLED is set to 1: a second run over
/// extra traces (CI's), after a run that checked the bundled corpus, reads only the extra
/// ones.
inline bool skip_bundled() {
  const char* env = std::getenv("DAYDREAM_SKIP_BUNDLED");
  return env && std::string_view(env) == "1";
}

/// Every Kineto trace of the bundled corpus (unless skip_bundled()), then (when
/// `with_extra`) every one of extra_root().
inline std::vector<corpus_trace> corpus(bool with_extra = true) {
  std::vector<corpus_trace> out;
  if (!skip_bundled()) out = bundled_corpus();
  if (with_extra)
    if (auto extra = extra_root())
      for (auto& f : kineto_traces(*extra))
        out.push_back({f, "extra:" + std::filesystem::relative(f, *extra).string(), false});
  return out;
}

} // namespace daydream::testing

#endif
