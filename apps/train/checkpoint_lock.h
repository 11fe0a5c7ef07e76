#pragma once
// One run per checkpoint folder. The process that saves (rank 0; no other rank writes there) holds an
// exclusive flock on <--checkpoint-dir>/cnn_train.lock for its whole run, the file naming its pid and host. A
// second run into the folder is refused at start, naming the first's pid: two runs would overwrite each
// other's epochN.safetensors and last.safetensors, and --resume auto would continue from either's.
//
// The kernel releases the lock when its process ends, however it ends (exit, a crash, kill -9), so no stale
// lock is ever left to remove by hand; a restarted run (torchrun --max-restarts, a requeued Slurm job) starts
// after the previous rank 0 is gone and takes it. A run that ends having saved nothing removes the lock file
// (and the folder, when it made it; issue 44: a failed run left a folder holding only cnn_train.lock), so a
// run that locked the file just before it went checks, once locked, that the name still holds its file, and
// takes the lock again when not. flock works on local folders and, since Linux 2.6.12, on NFS, where the
// kernel turns it into a POSIX lock the server sees.

#include <string>

namespace engine::apps {

inline constexpr const char* kCheckpointLockName = "cnn_train.lock";

class CheckpointDirLock {
 public:
  // Creates `dir` when missing and locks it. Throws engine::Error naming the folder, and the holder's pid and
  // host when another run holds it.
  explicit CheckpointDirLock(const std::string& dir);
  ~CheckpointDirLock();  // releases the lock; removes the file (and a folder it made) when nothing else is
                         // there
  CheckpointDirLock(const CheckpointDirLock&) = delete;
  CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;

 private:
  void lock_once(const std::string& dir);  // opens and flocks path_ (fd_), or throws

  std::string dir_, path_;
  bool created_ = false;  // the folder was made by this run
  int fd_ = -1;
};

}  // namespace engine::apps
