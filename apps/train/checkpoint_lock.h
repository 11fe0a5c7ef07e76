#pragma once
// One run per checkpoint folder. The process that saves (rank 0; no other rank writes there) holds an
// exclusive flock on <--checkpoint-dir>/cnn_train.lock for its whole run, the file naming its pid and host. A
// second run into the folder is refused at start, naming the first's pid: two runs would overwrite each
// other's epochN.safetensors and last.safetensors, and --resume auto would continue from either's.
//
// The kernel releases the lock when its process ends, however it ends (exit, a crash, kill -9), so no stale
// lock is ever left to remove by hand; a restarted run (torchrun --max-restarts, a requeued Slurm job) starts
// after the previous rank 0 is gone and takes it. The file stays (removing it would let a third run lock a
// new file while a second still holds the old one). flock works on local folders and, since Linux 2.6.12,
// on NFS, where the kernel turns it into a POSIX lock the server sees.

#include <string>

namespace engine::apps {

inline constexpr const char* kCheckpointLockName = "cnn_train.lock";

class CheckpointDirLock {
 public:
  // Creates `dir` when missing and locks it. Throws engine::Error naming the folder, and the holder's pid and
  // host when another run holds it.
  explicit CheckpointDirLock(const std::string& dir);
  ~CheckpointDirLock();  // releases the lock
  CheckpointDirLock(const CheckpointDirLock&) = delete;
  CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace engine::apps
