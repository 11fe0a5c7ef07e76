// The source tree's structure, checked from its own #include lines (docs/ARCHITECTURE.md, "Rooms and
// dependencies"): every room includes only the rooms below it along the arrows drawn there; the benchmarks
// stand on the libraries (apps/train, apps/cli), never on a program's file in apps/; inside the training
// library (apps/train) the files' includes form no cycle; and no source file is over 400 lines.
//
// The arrows below are the ones docs/ARCHITECTURE.md draws: a new dependency between rooms is a change of the
// design, made here and there together.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/environment.h"

namespace {

namespace fs = std::filesystem;

// Each room's direct arrows; a room may include what it reaches along them (tests reach everything).
const std::map<std::string, std::vector<std::string>>& arrows() {
  static const std::map<std::string, std::vector<std::string>> a = {
      {"core", {}},
      {"kernels", {"core"}},  // kernels/*.h: shapes.h, cuda_api.h
      {"kernels/cpu", {"kernels"}},
      {"kernels/cpu_fast", {"kernels/cpu"}},
      {"kernels/cuda", {"kernels/cpu"}},
      {"kernels/ops", {"kernels/cpu_fast", "kernels/cuda"}},
      {"layers", {"kernels/ops"}},
      {"optim", {"layers"}},
      {"dist", {"layers"}},
      {"data", {"kernels/cpu", "kernels/cuda"}},
      // The TensorBoard event writer (engine_tensorboard, on main beside this change): a leaf over data, for
      // the training library's --tensorboard and the programs.
      {"apps/tensorboard", {"data"}},
      {"apps/pictures", {"data"}},
      {"apps/train", {"dist", "data", "optim", "apps/tensorboard", "apps/pictures"}},
      {"apps/cli", {"apps/train"}},
      {"apps", {"apps/train", "apps/cli"}},  // the programs
      {"benchmarks", {"apps/train", "apps/cli"}},
      {"tests", {"apps", "benchmarks"}},
  };
  return a;
}

// The folders walked: the rooms, and scripts/ for the line count.
const std::vector<std::string> kRoots = {"core", "kernels", "layers",     "optim", "dist",
                                         "data", "apps",    "benchmarks", "tests", "scripts"};

bool has_extension(const fs::path& p, std::initializer_list<const char*> extensions) {
  return std::any_of(extensions.begin(), extensions.end(), [&](const char* e) { return p.extension() == e; });
}

// Repository-relative paths of the C++/CUDA sources under the rooms.
std::vector<std::string> sources(std::initializer_list<const char*> extensions) {
  const fs::path repo = engine::testing::repo_root();
  std::vector<std::string> out;
  for (const std::string& root : kRoots) {
    for (const auto& entry : fs::recursive_directory_iterator(repo / root)) {
      if (entry.is_regular_file() && has_extension(entry.path(), extensions))
        out.push_back(fs::relative(entry.path(), repo).generic_string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The room of a path: apps/<folder> and kernels/<folder> are rooms of their own; else the top folder.
std::string room_of(const std::string& path) {
  const auto first = path.find('/');
  std::string top = path.substr(0, first);
  if (top != "apps" && top != "kernels") return top;
  const auto second = path.find('/', first + 1);
  return second == std::string::npos ? top : path.substr(0, second);
}

// The file of `#include "file"` on `line`, or "". Parsed by hand: gcc 12 warns inside <regex> under the
// sanitizer build's -O2 (a -Wmaybe-uninitialized false positive), and -Werror makes that a failure.
std::string quoted_include(const std::string& line) {
  std::size_t at = line.find_first_not_of(" \t");
  if (at == std::string::npos || line[at] != '#') return "";
  at = line.find_first_not_of(" \t", at + 1);
  if (at == std::string::npos || line.compare(at, 7, "include") != 0) return "";
  at = line.find_first_not_of(" \t", at + 7);
  if (at == std::string::npos || line[at] != '"') return "";
  const std::size_t end = line.find('"', at + 1);
  return end == std::string::npos ? "" : line.substr(at + 1, end - at - 1);
}

std::vector<std::string> quoted_includes(const std::string& path) {
  std::ifstream in(engine::testing::repo_root() / path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (std::string file = quoted_include(line); !file.empty()) out.push_back(file);
  }
  return out;
}

// The rooms `room` may include: itself and everything along its arrows.
std::set<std::string> reachable(const std::string& room) {
  std::set<std::string> seen{room};
  std::vector<std::string> frontier{room};
  while (!frontier.empty()) {
    const std::string r = frontier.back();
    frontier.pop_back();
    const auto it = arrows().find(r);
    if (it == arrows().end()) continue;
    for (const std::string& next : it->second) {
      if (seen.insert(next).second) frontier.push_back(next);
    }
  }
  return seen;
}

const std::initializer_list<const char*> kCxx = {".h", ".cpp", ".cu", ".cuh"};

TEST(SourceStructure, EveryRoomIsDrawnWithItsArrows) {
  for (const std::string& path : sources(kCxx)) {
    EXPECT_TRUE(arrows().count(room_of(path)) > 0)
        << path << " is in room '" << room_of(path)
        << "', which docs/ARCHITECTURE.md and this test do not draw: add it with its arrows";
  }
}

TEST(SourceStructure, RoomsIncludeOnlyTheRoomsBelowThem) {
  for (const std::string& path : sources(kCxx)) {
    const std::string from = room_of(path);
    const std::set<std::string> allowed = reachable(from);
    for (const std::string& inc : quoted_includes(path)) {
      const std::string to = room_of(inc);
      if (arrows().count(to) == 0) continue;  // a generated or third-party header (stb, ...)
      EXPECT_TRUE(allowed.count(to) > 0) << path << " (room " << from << ") includes " << inc << " (room "
                                         << to << "), which is not below it in docs/ARCHITECTURE.md";
    }
  }
}

TEST(SourceStructure, NoBenchmarkIncludesAProgramsFile) {
  for (const std::string& path : sources(kCxx)) {
    if (room_of(path) != "benchmarks") continue;
    for (const std::string& inc : quoted_includes(path)) {
      EXPECT_NE(room_of(inc), "apps") << path << " includes the program file " << inc
                                      << ": benchmarks stand on the libraries (apps/train, apps/cli)";
    }
  }
}

// Files as nodes (a .h and its .cpp are one node, named by the stem); an edge for each include inside the
// room.
TEST(SourceStructure, TrainingLibraryIncludesFormNoCycle) {
  std::map<std::string, std::set<std::string>> edges;
  auto node = [](const std::string& path) { return fs::path(path).replace_extension().generic_string(); };
  for (const std::string& path : sources(kCxx)) {
    if (room_of(path) != "apps/train") continue;
    edges[node(path)];
    for (const std::string& inc : quoted_includes(path)) {
      if (room_of(inc) == "apps/train" && node(inc) != node(path)) edges[node(path)].insert(node(inc));
    }
  }
  ASSERT_GT(edges.size(), 10u) << "apps/train holds the training library";
  // Depth-first search; a node met again while on the stack closes a cycle, printed along the stack.
  std::map<std::string, int> state;  // 0 new, 1 on the stack, 2 done
  std::vector<std::string> stack;
  std::function<void(const std::string&)> visit = [&](const std::string& n) {
    state[n] = 1;
    stack.push_back(n);
    for (const std::string& next : edges[n]) {
      if (state[next] == 1) {
        std::string cycle;
        for (auto it = std::find(stack.begin(), stack.end(), next); it != stack.end(); ++it)
          cycle += *it + " -> ";
        ADD_FAILURE() << "the includes of apps/train run in a cycle: " << cycle << next;
      } else if (state[next] == 0) {
        visit(next);
      }
    }
    stack.pop_back();
    state[n] = 2;
  };
  for (const auto& [n, unused] : edges) {
    if (state[n] == 0) visit(n);
  }
}

TEST(SourceStructure, NoSourceFileIsOver400Lines) {
  for (const std::string& path : sources({".h", ".cpp", ".cu", ".cuh", ".py", ".sh"})) {
    std::ifstream in(engine::testing::repo_root() / path);
    const auto lines = std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
    EXPECT_LE(lines, 400) << path << " has " << lines << " lines: split it by concern (docs/ARCHITECTURE.md)";
  }
}

}  // namespace
