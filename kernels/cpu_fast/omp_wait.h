#pragma once
// How the CPU device's OpenMP threads wait, on a machine other processes share.
//
// libgomp's threads spin at the end of every parallel region (by default up to ~300k polls, a fraction of a
// millisecond, before sleeping): on idle cores that saves a wake-up; on cores another process also wants,
// the thread that finished first spins on a core the late one (descheduled) needs, and every region waits
// for its slowest thread. Measured on 2 cores with other work beside (benchmarks/RESULTS.md): a oneDNN
// convolution plus small regions took 13x longer with the default policy than with passive waiting.
// libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when it is loaded, before main(): so a program sets
// them by running itself again.

namespace engine::cpu_fast {

// Call first in main(), before any thread starts. When neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set,
// sets OMP_WAIT_POLICY=passive (threads sleep at once at a barrier) and re-executes the program with the
// same arguments and process id (/proc/self/exe); returns when they are already set (the user's choice, or
// this re-execution's) or the re-execution is impossible (then the default policy stays: a speed matter
// only).
void prefer_passive_omp_wait(char** argv);

}  // namespace engine::cpu_fast
