"""Pinned batches copied with non_blocking=True, and an unpinned loader copied plainly: no warning."""
import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    device = torch.device("cuda")
    ds = TensorDataset(torch.randn(64, 3), torch.randint(0, 2, (64,)))
    pinned = DataLoader(ds, batch_size=8, num_workers=2, pin_memory=True)
    plain = DataLoader(ds, batch_size=8, num_workers=2, pin_memory=False)
    for x, y in pinned:
        x, y = x.to(device, non_blocking=True), y.cuda(non_blocking=True)
    for x, y in plain:
        x, y = x.to(device), y.cuda()


if __name__ == "__main__":
    main()
