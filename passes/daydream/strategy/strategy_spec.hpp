// Defines strategy_spec: a hybrid parallel strategy (data x tensor x pipeline, micro-batches, ZeRO, re-computation).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_STRATEGY_SPEC_HPP
#define DAYDREAM_STRATEGY_STRATEGY_SPEC_HPP

#include <daydream/config.hpp>
#include <daydream/registry/params.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace daydream::strategy {

/// The order in which a pipeline stage runs the forward and backward passes of its
/// micro-batches.
enum class pipeline_schedule : std::uint8_t {
  one_f_one_b, ///< PipeDream-Flush / Megatron: warm-up forwards, then one forward one backward
  gpipe,       ///< GPipe: every forward, then every backward
};

/// "1f1b" or "gpipe".
inline constexpr std::string_view to_string(pipeline_schedule s) noexcept {
  return s == pipeline_schedule::gpipe ? "gpipe" : "1f1b";
}

/// What re-computation keeps between forward and backward.
enum class recompute_mode : std::uint8_t {
  none,   ///< every layer keeps what its backward needs
  blocks, ///< each layer keeps only its input and runs its forward again before its backward
};

/// "none" or "blocks".
inline constexpr std::string_view to_string(recompute_mode r) noexcept {
  return r == recompute_mode::blocks ? "blocks" : "none";
}

/// A strategy: `dp` data-parallel replicas of a model cut into `pp` pipeline stages,
/// each layer split `tp` ways (Megatron-style), a batch in `micro` micro-batches, ZeRO
/// stage `zero` (0: none) and re-computation. Uses dp x tp x pp devices.
///
///     auto s = daydream::strategy::strategy_spec::parse("dp=8,tp=2,pp=4,micro=16,zero=1");
///     s.devices();     // 64
///     s.to_string();   // "dp=8,tp=2,pp=4,micro=16,zero=1"
struct strategy_spec {
  std::uint32_t dp = 1;    ///< data-parallel degree
  std::uint32_t tp = 1;    ///< tensor-parallel degree
  std::uint32_t pp = 1;    ///< pipeline stages
  std::uint32_t micro = 1; ///< micro-batches per iteration (per replica)
  std::uint32_t zero = 0;  ///< ZeRO stage 0-3
  recompute_mode recompute = recompute_mode::none;
  pipeline_schedule schedule = pipeline_schedule::one_f_one_b;

  /// Devices the strategy uses.
  constexpr std::uint32_t devices() const noexcept { return dp * tp * pp; }

  /// Parses `dp=..,tp=..,pp=..[,micro=..][,zero=0..3][,recompute=none|blocks][,schedule=1f1b|gpipe]`.
  /// Missing degrees are 1; `micro` defaults to `pp`. Throws daydream::usage_error
  /// naming the spec and the bad item.
  static strategy_spec parse(std::string_view spec) {
    auto fail = [&](const std::string& why) -> strategy_spec {
      throw usage_error("daydream: strategy '" + std::string(spec) + "': " + why);
    };
    strategy_spec s;
    try {
      auto p = pass_params::parse("strategy", spec);
      auto degree = [&](const char* key, std::int64_t fallback) {
        auto v = p.get_double(key, double(fallback));
        if (v < 1 || v != double(std::int64_t(v)) || v > 1e6)
          fail(std::string(key) + " must be a positive whole number");
        return static_cast<std::uint32_t>(v);
      };
      s.dp = degree("dp", 1);
      s.tp = degree("tp", 1);
      s.pp = degree("pp", 1);
      s.micro = degree("micro", s.pp);
      auto z = p.get_double("zero", 0);
      if (z != 0 && z != 1 && z != 2 && z != 3) fail("zero must be 0, 1, 2 or 3");
      s.zero = static_cast<std::uint32_t>(z);
      auto r = p.get_string("recompute", "none");
      if (r == "blocks") s.recompute = recompute_mode::blocks;
      else if (r != "none") fail("recompute must be none or blocks, not '" + r + "'");
      auto sc = p.get_string("schedule", "1f1b");
      if (sc == "gpipe") s.schedule = pipeline_schedule::gpipe;
      else if (sc != "1f1b") fail("schedule must be 1f1b or gpipe, not '" + sc + "'");
      p.finish();
    } catch (const usage_error& e) {
      std::string why = e.what();
      if (why.starts_with("daydream: strategy")) throw;
      const std::string prefix = "daydream: pass 'strategy'";
      if (why.starts_with(prefix)) why = why.substr(prefix.size());
      while (!why.empty() && (why.front() == ':' || why.front() == ' ')) why.erase(0, 1);
      fail(why);
    }
    return s;
  }

  /// The canonical spec: dp, tp, pp and micro always; zero, recompute and schedule when
  /// not the default. parse(to_string()) gives the same strategy.
  std::string to_string() const {
    std::string s = "dp=" + std::to_string(dp) + ",tp=" + std::to_string(tp) + ",pp=" + std::to_string(pp) +
                    ",micro=" + std::to_string(micro);
    if (zero) s += ",zero=" + std::to_string(zero);
    if (recompute != recompute_mode::none) s += ",recompute=" + std::string(strategy::to_string(recompute));
    if (schedule != pipeline_schedule::one_f_one_b) s += ",schedule=" + std::string(strategy::to_string(schedule));
    return s;
  }

  friend bool operator==(const strategy_spec&, const strategy_spec&) = default;
};

} // namespace daydream::strategy

#endif
