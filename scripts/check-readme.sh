#!/usr/bin/env bash
# README.md checked against the tree (issue 44, defect 7: its first command did not build cnn_export_onnx,
# which it then used, and its cold-build figure did not hold).
#
#   bash scripts/check-readme.sh [BUILD]         the cheap checks, seconds (ctest's ReadmeCheck runs them):
#     - every program the README runs (build/apps/NAME) is built by its first command (scripts/train.sh);
#     - every file it names (scripts/..., benchmarks/..., docs/..., a link's target) exists;
#     - every flag of every build/apps/cnn_* command it shows is one the program's --help lists (BUILD's
#       programs, default build/; a program not built there is said and skipped).
#   bash scripts/check-readme.sh --run [BUILD]   also the figures, by running the commands (tens of minutes,
#     by hand on an idle machine): the first command from an empty compiler cache in a fresh clone (its build
#     minutes and test accuracy against the README's), then each "Watching a run" command, shortened.
# Exit status: 0 all held; 1 a check failed (each failure is printed).
set -euo pipefail
cd "$(dirname "$0")/.."

run=0
if [ "${1:-}" = "--run" ]; then run=1; shift; fi
build=${1:-build}

python3 - "$build" <<'EOF'
import os, re, shlex, subprocess, sys

build = sys.argv[1]
readme = open("README.md").read()
failures = []

# 1. The programs the README runs are built by the first command.
train_sh = open("scripts/train.sh").read()
m = re.search(r"^bash scripts/build\.sh (.+)$", train_sh, re.M)
built = set(m.group(1).split()) if m else set()
for name in sorted(set(re.findall(r"build/apps/(\w+)", readme))):
    if name not in built:
        failures.append(f"README runs build/apps/{name}, which its first command (scripts/train.sh: "
                        f"scripts/build.sh {' '.join(sorted(built))}) does not build")

# 2. The files it names exist.
paths = set(re.findall(r"(?<![\w/.])((?:scripts|benchmarks|docs|apps|tests)/[\w./-]+\.(?:sh|py|md|h|cpp|png))", readme))
paths |= {p for p in re.findall(r"\]\(([^)#:]+)\)", readme) if not p.startswith("http")}
for p in sorted(paths):
    if not os.path.exists(p):
        failures.append(f"README names {p}, which does not exist")

# 3. The flags of its commands are the programs'. A command is build/apps/cnn_X and the words after it on its
# line (and the lines a trailing backslash continues); "..." and <placeholders> are not flags.
lines = readme.split("\n")
helps = {}
skipped = set()
i = 0
while i < len(lines):
    text = lines[i]
    while text.endswith("\\") and i + 1 < len(lines):
        i += 1
        text = text[:-1] + " " + lines[i]
    i += 1
    for program, rest in re.findall(r"build/apps/(cnn_\w+)([^`#]*)", text):
        if program not in helps:
            exe = os.path.join(build, "apps", program)
            if not os.access(exe, os.X_OK):
                skipped.add(program)
                helps[program] = None
            else:
                helps[program] = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
        if helps[program] is None:
            continue
        for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", rest):
            if not re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", helps[program]):
                failures.append(f"README: build/apps/{program} {flag}: not a flag of {program} (its --help)")

for program in sorted(skipped):
    print(f"check-readme: {build}/apps/{program} is not built: its flags were not checked")
for f in failures:
    print("check-readme: " + f)
if failures:
    sys.exit(1)
print(f"check-readme: the README's programs, files and flags hold ({len(paths)} files, "
      f"{len([h for h in helps.values() if h])} programs' flags)")
EOF

[ "$run" = 1 ] || exit 0

# The figures: the first command in a fresh clone with an empty compiler cache, timed.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q . "$work/clone"
echo "check-readme: running the first command (scripts/train.sh) in $work/clone with an empty compiler cache"
start=$(date +%s)
(cd "$work/clone" && CCACHE_DISABLE=1 bash scripts/train.sh) > "$work/train.log" 2>&1 || {
  tail -20 "$work/train.log"
  echo "check-readme: the first command failed"
  exit 1
}
total=$(($(date +%s) - start))
trained=$(grep -c "Epoch" "$work/train.log" || true)
acc=$(sed -n 's/^Test Acc: \([0-9.]*\)%$/\1/p' "$work/train.log" | tail -1)
minutes=$(sed -n 's/.*about \([0-9]*\) minutes to build.*/\1/p' README.md | head -1)
readme_acc=$(sed -n 's/.* of training to \([0-9.]*\)% test accuracy.*/\1/p' README.md | head -1)
echo "check-readme: first command: ${total} s in all, ${trained} epoch line(s), test accuracy ${acc}%"
echo "check-readme: README says: about ${minutes:-?} minutes to build, ${readme_acc:-?}%"
status=0
if [ -n "$minutes" ] && [ "$total" -gt $((minutes * 60 * 5 / 4 + 30)) ]; then
  echo "check-readme: the build and training took ${total} s, more than the README's about ${minutes} minutes"
  status=1
fi
if [ -n "$readme_acc" ] && [ -n "$acc" ] &&
  ! awk -v a="$acc" -v r="$readme_acc" 'BEGIN { exit !(a - r < 1.5 && r - a < 1.5) }'; then
  echo "check-readme: test accuracy ${acc}% is not the README's ${readme_acc}% (within 1.5 points)"
  status=1
fi
# "Watching a run", shortened (one epoch on a subset), each into its own folder.
while read -r line; do
  cmd=${line%%#*}
  cmd=${cmd//--epochs 3/--epochs 1}
  echo "check-readme: $cmd"
  (cd "$work/clone" && eval "$cmd --limit-train 1000 --limit-test 500 --cpu") > "$work/watch.log" 2>&1 || {
    tail -5 "$work/watch.log"
    echo "check-readme: failed: $cmd"
    status=1
  }
done < <(sed -n '/^\*\*Watching a run\*\*/,/^`--tensorboard DIR`/p' README.md | grep '^build/apps/cnn_train')
exit $status
