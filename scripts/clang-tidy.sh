#!/usr/bin/env bash
# clang-tidy over the engine's C++ sources, with the checks .clang-tidy selects; any finding fails (exit 1).
#
#   scripts/clang-tidy.sh BUILD_DIR           the files changed relative to the base (below), as scripts/test.sh
#   scripts/clang-tidy.sh BUILD_DIR --all     every C++ translation unit of BUILD_DIR
#
# Why changed files by default: clang-tidy parses each file as a compiler front end does, and the headers of
# fmt, CLI11, gtest and oneDNN make that 5-20 s per file; the ~160 translation units take about 25 minutes
# on CI's 2 cores, on top of a test script of ~26 minutes. The files a change touches take seconds to a few
# minutes. Run --all after changing .clang-tidy (the lead does before a release).
#
# The base: $CLANG_TIDY_BASE when set; else the merge-base with origin/main, or with main, when HEAD is not
# main itself; else the last commit (HEAD~1), so CI's clean clone of main checks the commit it tests; without
# any history (a one-commit clone), every file. Uncommitted and untracked files count as changed.
#
# A changed header is checked through the translation units that include it (HeaderFilterRegex reports
# findings in our headers). .cu files are not checked: clang-tidy would need clang's CUDA front end, which
# does not understand the nvcc flags in compile_commands.json, and clang 14 does not know CUDA 13; the CUDA
# host code in .cpp files is checked where the build has CUDA on.
#
# BUILD_DIR needs compile_commands.json (the top CMakeLists.txt sets CMAKE_EXPORT_COMPILE_COMMANDS).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:?usage: scripts/clang-tidy.sh BUILD_DIR [--all]}
mode=${2:-changed}
db="$build/compile_commands.json"
[ -f "$db" ] || { echo "clang-tidy.sh: $db not found (configure $build with CMake first)" >&2; exit 2; }
command -v clang-tidy >/dev/null || { echo "clang-tidy.sh: clang-tidy not found (scripts/install-deps.sh)" >&2; exit 2; }

# Every C++ translation unit of the build, relative to the repository root (no .cu, nothing outside it).
mapfile -t units < <(python3 - "$db" "$PWD" <<'EOF'
import json, os, sys
db, root = sys.argv[1], os.path.realpath(sys.argv[2])
seen = set()
for entry in json.load(open(db)):
    path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
    rel = os.path.relpath(path, root)
    if rel.startswith("..") or not rel.endswith(".cpp") or rel.startswith(("build", ".deps")):
        continue
    if rel not in seen:
        seen.add(rel)
        print(rel)
EOF
)

if [ "$mode" = "--all" ]; then
  files=("${units[@]}")
  what="all ${#files[@]} translation units"
else
  base=${CLANG_TIDY_BASE:-}
  if [ -z "$base" ]; then
    head=$(git rev-parse HEAD)
    for ref in origin/main main; do
      if mb=$(git merge-base HEAD "$ref" 2>/dev/null) && [ "$mb" != "$head" ]; then
        base=$mb
        break
      fi
    done
  fi
  if [ -z "$base" ] && git rev-parse -q --verify HEAD~1 >/dev/null; then base=HEAD~1; fi
  if [ -z "$base" ]; then
    files=("${units[@]}")
    what="all ${#files[@]} translation units (no history to compare with)"
  else
    mapfile -t changed < <({
      git diff --name-only "$base" --
      git ls-files --others --exclude-standard
    } | grep -E '\.(cpp|h|cuh)$' | sort -u)
    declare -A pick=()
    for f in "${changed[@]}"; do
      [ -f "$f" ] || continue  # deleted
      case "$f" in
        *.cpp) for u in "${units[@]}"; do [ "$u" = "$f" ] && pick[$f]=1; done ;;
        *)  # a header: the units that include it
          for u in $(grep -lF "#include \"$f\"" "${units[@]}" 2>/dev/null || true); do pick[$u]=1; done ;;
      esac
    done
    files=("${!pick[@]}")
    what="${#files[@]} translation unit(s) changed since $(git rev-parse --short "$base")"
  fi
fi

echo "clang-tidy: $what"
[ ${#files[@]} -gt 0 ] || exit 0
# -quiet: findings only. WarningsAsErrors makes a check's finding an error (run-clang-tidy then exits
# non-zero); compiler warnings clang gives and gcc does not (clang-diagnostic-*) stay warnings there, so any
# "warning:" line fails too.
status=0
run-clang-tidy -p "$build" -j "${JOBS:-$(nproc)}" -quiet "${files[@]/#/$PWD/}" >"$build/clang-tidy.log" 2>&1 || status=$?
findings=$(sed 's/\x1b\[[0-9;]*m//g' "$build/clang-tidy.log" | grep -E '^[^ ]+:[0-9]+:[0-9]+: (error|warning): ' | sort -u || true)
if [ "$status" -ne 0 ] || [ -n "$findings" ]; then
  if [ -n "$findings" ]; then echo "$findings"; else cat "$build/clang-tidy.log"; fi
  echo "clang-tidy: findings above (full output: $build/clang-tidy.log); fix them, or NOLINT(check) with a reason" >&2
  exit 1
fi
echo "clang-tidy: no findings"
