"""Facts gathered, never judged: the kernel, the cgroup, /dev/shm, /proc, sysfs, nvidia-smi and torch as they
report them, each read by one function with a seam (a root folder, a recorded output) for tests. Standard library only;
torch is imported only by the readers that ask it."""
