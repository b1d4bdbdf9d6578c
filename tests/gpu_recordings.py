"""Recorded GPU facts of real machines, fed through envkit.harness.probes.gpufacts (the one seam) in the unit tier.

Each recording names the public thread its values were read from. nvidia-smi lines are laid out as
``nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader`` prints
them (the csv layout as recorded in triton-inference-server/server#8070: ``7.0, Default, 570.86.15,
NVIDIA TITAN V, 0``), with the name, driver and memory the cited nvidia-smi output shows and the
device's compute capability.
"""

# RTX 5090, driver 570.153.02, 32607MiB; the same machine fails "no kernel image is available for execution
# on the device" (develsoftware/GMinerRelease#938). Blackwell GeForce is compute capability 12.0 (NVIDIA/cutlass#2511).
SMI_RTX5090 = "NVIDIA GeForce RTX 5090, 12.0, 570.153.02, 32607 MiB\n"

# Tesla P100-PCIE-16GB x4, driver 515.65.01 (CUDA 11.7), 16384MiB (wookayin/gpustat#130); P100 is compute capability 6.0.
SMI_P100_R515 = "".join("Tesla P100-PCIE-16GB, 6.0, 515.65.01, 16384 MiB\n" for _ in range(4))

# NVIDIA GH200 480GB, driver 570.148.08 (CUDA 12.8), 97871MiB (vortex-data/vortex#7579); Hopper, compute capability 9.0.
SMI_GH200 = "NVIDIA GH200 480GB, 9.0, 570.148.08, 97871 MiB\n"

# WSL2: nvidia-smi reports the Windows driver, 546.33 (CUDA 12.3), RTX 4090 24564MiB (microsoft/WSL#11050); Ada, 8.9.
SMI_WSL_RTX4090 = "NVIDIA GeForce RTX 4090, 8.9, 546.33, 24564 MiB\n"

# R470's nvidia-smi has no compute_cap field (huggingface/candle#733, "NVIDIA System Management Interface -- v470.182.03").
SMI_R470_NO_CAP_ERROR = 'Field "compute_cap" is not a valid field to query.\n'

# torch.cuda on an RTX 5090 D with torch 2.6.0+cu126, driver 570.124.04 (pytorch/pytorch#150733): "NVIDIA GeForce
# RTX 5090 D with CUDA capability sm_120 is not compatible ... supports CUDA capabilities sm_50 sm_60 sm_70 sm_75
# sm_80 sm_86 sm_90."
TORCH_RTX5090D_CU126 = {
    "torch": "2.6.0+cu126", "cuda": "12.6", "hip": None, "available": True, "error": None,
    "arch_list": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
    "devices": [{"name": "NVIDIA GeForce RTX 5090 D", "capability": (12, 0), "integrated": False}],
}

# `docker info` of a host that loses its GPUs ("Failed to initialize NVML: Unknown Error", utkuozdemir/nvidia_gpu_exporter#110).
DOCKER_INFO_SYSTEMD = """\
 Logging Driver: json-file
 Cgroup Driver: systemd
 Cgroup Version: 2
 Runtimes: io.containerd.runc.v2 nvidia runc
 Default Runtime: runc
"""

# `docker info` with the cgroupfs driver (NVIDIA/nvidia-container-toolkit#115).
DOCKER_INFO_CGROUPFS = """\
 Logging Driver: json-file
 Cgroup Driver: cgroupfs
 Cgroup Version: 2
 Runtimes: io.containerd.runc.v2 io.containerd.runtime.v1.linux nvidia runc
 Default Runtime: runc
"""

# WSL2 pinned-memory cap: allocations above 500 MB fail in Docker on WSL2 (microsoft/WSL#14078).
WSL_PIN_CAP_BYTES = 500 * 1000 * 1000

# GH200 host-to-device, 1 GiB copies (vortex-data/vortex#7815): pageable 92.989 GiB/s, pinned 97.423 GiB/s.
GH200_H2D_GIBPS = {"pageable": 92.989, "pinned": 97.423}
