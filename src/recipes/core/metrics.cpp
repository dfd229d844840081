#include "etcd/recipes/metrics.h"

#include <algorithm>
#include <sstream>

namespace etcd::recipes {

std::string PrometheusMetrics::key(const Labels& labels) {
  std::string out;
  for (const auto& [k, v] : labels) {
    if (!out.empty()) out += ',';
    out += k;
    out += "=\"";
    for (char c : v) {
      if (c == '\\' || c == '"') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    out += '"';
  }
  return out;
}

void PrometheusMetrics::add(std::string_view name, const Labels& labels, double delta) {
  std::lock_guard lock(mu_);
  auto& s = series_[std::string(name)][key(labels)];
  s.kind = 'c';
  s.value += delta;
}

void PrometheusMetrics::observe(std::string_view name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  auto& s = series_[std::string(name)][key(labels)];
  s.kind = 's';
  s.value += value;
  s.count += 1;
  s.max = s.count == 1 ? value : std::max(s.max, value);
}

void PrometheusMetrics::set(std::string_view name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  auto& s = series_[std::string(name)][key(labels)];
  s.kind = 'g';
  s.value = value;
}

double PrometheusMetrics::value(std::string_view name, const Labels& labels) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(name);
  if (it == series_.end()) return 0;
  auto s = it->second.find(key(labels));
  if (s == it->second.end()) return 0;
  return s->second.kind == 's' ? s->second.count : s->second.value;
}

std::string PrometheusMetrics::render() const {
  std::lock_guard lock(mu_);
  std::ostringstream out;
  auto braces = [](const std::string& k) { return k.empty() ? std::string() : "{" + k + "}"; };
  for (const auto& [name, by_labels] : series_) {
    if (by_labels.empty()) continue;
    const char kind = by_labels.begin()->second.kind;
    out << "# TYPE " << name << (kind == 'c' ? " counter" : kind == 'g' ? " gauge" : " summary") << "\n";
    for (const auto& [k, s] : by_labels) {
      if (kind == 's') {
        out << name << "_count" << braces(k) << " " << s.count << "\n";
        out << name << "_sum" << braces(k) << " " << s.value << "\n";
        out << name << "_max" << braces(k) << " " << s.max << "\n";
      } else {
        out << name << braces(k) << " " << s.value << "\n";
      }
    }
  }
  return out.str();
}

}  // namespace etcd::recipes
