// Defines device_catalogue: GPUs by name, alias and Kineto deviceProperties name.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_DEVICE_CATALOGUE_HPP
#define DAYDREAM_SEMANTICS_DEVICE_CATALOGUE_HPP

#include <daydream/config.hpp>
#include <daydream/semantics/device.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

/// A name as the catalogue compares it: lower case, with spaces, '-' and '_' alike and
/// runs of them one, trimmed. "H100 SXM", "h100-sxm" and "H100_SXM" are the same name.
inline std::string device_name_key(std::string_view name) {
  std::string out;
  bool gap = false;
  for (char c : name) {
    if (c == ' ' || c == '-' || c == '_' || c == '\t') {
      gap = !out.empty();
      continue;
    }
    if (gap) out += ' ';
    gap = false;
    out += (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
  }
  return out;
}

/// A reference a catalogue's figures cite: a document title and, where there is one,
/// its address.
struct device_reference {
  std::string title;
  std::string url;
};

/// GPUs by name: the bundled catalogue (io::bundled_device_catalogue, from
/// data/devices.json), a user's file of the same form (io::load_device_catalogue), or
/// devices added in code. Names and aliases are unique across the catalogue under
/// device_name_key. Lookups return pointers into the catalogue, valid until it changes
/// (add and merge invalidate them).
///
///     auto cat = daydream::io::bundled_device_catalogue();
///     cat.merge(daydream::io::load_device_catalogue("my_gpus.json"));
///     const auto* d = cat.find_kineto("NVIDIA H100 80GB HBM3");   // the H100-SXM entry
class device_catalogue {
public:
  device_catalogue() = default;
  /// An empty catalogue that names `source` (a file) in its messages.
  explicit device_catalogue(std::string source) : source_(std::move(source)) {}

  /// Where the devices come from, for messages.
  const std::string& source() const noexcept { return source_; }
  /// The devices, in the order they were added.
  const std::vector<device>& devices() const noexcept { return devices_; }
  std::size_t size() const noexcept { return devices_.size(); }
  auto begin() const noexcept { return devices_.begin(); }
  auto end() const noexcept { return devices_.end(); }

  /// The references the devices' provenance cites, by key.
  const std::map<std::string, device_reference>& references() const noexcept { return references_; }
  /// Adds reference `key`; a key already present is replaced.
  void add_reference(std::string key, device_reference r) { references_[std::move(key)] = std::move(r); }

  /// Adds `d`. Throws daydream::usage_error when its name or an alias is already a name
  /// or alias of a device in the catalogue, naming both devices.
  void add(device d) {
    std::vector<std::string> keys;
    for (auto* n : names_of(d)) {
      auto k = device_name_key(*n);
      if (k.empty()) fail("device '" + d.name + "' has an empty name or alias");
      if (auto it = index_.find(k); it != index_.end())
        fail("duplicate name '" + *n + "': device '" + d.name + "' and device '" + devices_[it->second].name +
             "' both answer to it");
      for (auto& seen : keys)
        if (seen == k) fail("duplicate name '" + *n + "' within device '" + d.name + "'");
      keys.push_back(std::move(k));
    }
    for (auto& k : keys) index_.emplace(std::move(k), devices_.size());
    devices_.push_back(std::move(d));
  }

  /// Adds the devices and references of `other`. A device whose name is the name of one
  /// here replaces it (a user's file corrects a bundled entry); any other clash of names
  /// or aliases throws daydream::usage_error (add). Invalidates pointers from find.
  void merge(const device_catalogue& other) {
    for (auto& [k, r] : other.references_) references_[k] = r;
    for (auto& d : other.devices_) {
      auto it = index_.find(device_name_key(d.name));
      if (it != index_.end() && device_name_key(devices_[it->second].name) == device_name_key(d.name))
        remove_at(it->second);
      add(d);
    }
  }

  /// The device that answers to `name` (its name or an alias, compared by
  /// device_name_key), or nullptr.
  const device* find(std::string_view name) const {
    auto it = index_.find(device_name_key(name));
    return it == index_.end() ? nullptr : &devices_[it->second];
  }

  /// The device of a trace's deviceProperties `name` ("NVIDIA H100 80GB HBM3",
  /// "Tesla V100-SXM2-32GB", "AMD Instinct MI300X VF"): find(name), then find with a
  /// leading vendor word ("NVIDIA", "AMD", "Tesla", "AMD Instinct") removed. nullptr for
  /// a GPU the catalogue does not describe (a V100 16GB is not the 32GB entry).
  const device* find_kineto(std::string_view name) const {
    if (auto* d = find(name)) return d;
    auto key = device_name_key(name);
    for (std::string_view prefix : {"amd instinct ", "nvidia ", "amd ", "tesla "})
      if (key.size() > prefix.size() && std::string_view(key).substr(0, prefix.size()) == prefix)
        if (auto* d = find(std::string_view(key).substr(prefix.size()))) return d;
    return nullptr;
  }

  /// The device that answers to `name`. Throws daydream::usage_error for an unknown name,
  /// listing the catalogue's names.
  const device& at(std::string_view name) const {
    if (auto* d = find(name)) return *d;
    std::string known;
    for (auto& d : devices_) known += (known.empty() ? "" : ", ") + d.name;
    fail("no GPU named '" + std::string(name) + "' (known: " + (known.empty() ? "none" : known) + ")");
  }

private:
  static std::vector<const std::string*> names_of(const device& d) {
    std::vector<const std::string*> out{&d.name};
    for (auto& a : d.aliases) out.push_back(&a);
    return out;
  }
  void remove_at(std::size_t i) {
    devices_.erase(devices_.begin() + std::ptrdiff_t(i));
    index_.clear();
    for (std::size_t k = 0; k < devices_.size(); ++k)
      for (auto* n : names_of(devices_[k])) index_.emplace(device_name_key(*n), k);
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw usage_error("daydream: device catalogue" + (source_.empty() ? std::string() : " " + source_) + ": " + why);
  }

  std::string source_;
  std::vector<device> devices_;
  std::map<std::string, std::size_t> index_; // device_name_key of every name and alias -> device
  std::map<std::string, device_reference> references_;
};

} // namespace daydream::passes

#endif
