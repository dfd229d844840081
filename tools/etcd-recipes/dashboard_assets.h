// The dashboard page's files (tools/etcd-recipes/dashboard/: index.html,
// dashboard.js, dashboard.css), embedded in the tool at build time by
// cmake/EmbedDashboardAssets.cmake: the tool serves them with nothing beside
// it, and the page loads nothing from elsewhere.
#pragma once

#include <string_view>
#include <vector>

namespace etcd_cli {

struct DashboardAsset {
  std::string_view path;  // "/index.html", ...
  std::string_view body;
};

const std::vector<DashboardAsset>& dashboard_assets();

}  // namespace etcd_cli
