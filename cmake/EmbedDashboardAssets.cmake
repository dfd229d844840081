# Writes OUT: a C++ source defining etcd_cli::dashboard_assets(), the
# dashboard page's files (NAMES, under DIR) as they are, so the tool serves
# them without any file beside it. Run at build time (cmake -P), whenever a
# file changes.
set(body "// Generated from tools/etcd-recipes/dashboard/ by cmake/EmbedDashboardAssets.cmake: do not edit.\n")
string(APPEND body "#include \"dashboard_assets.h\"\n\nnamespace etcd_cli {\n\n")
string(APPEND body "const std::vector<DashboardAsset>& dashboard_assets() {\n")
string(APPEND body "  static const std::vector<DashboardAsset> kAssets = {\n")
string(REPLACE "," ";" NAMES "${NAMES}")  # given comma-separated
foreach(name IN LISTS NAMES)
  file(READ "${DIR}/${name}" content)
  string(FIND "${content}" ")etcdr_asset\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${name} contains the raw string's delimiter")
  endif()
  string(APPEND body "      {\"/${name}\",\n       R\"etcdr_asset(${content})etcdr_asset\"},\n")
endforeach()
string(APPEND body "  };\n  return kAssets;\n}\n\n}  // namespace etcd_cli\n")
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
