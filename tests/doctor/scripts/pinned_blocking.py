"""A training loop whose pinned batches are copied with blocking .to(): doctor --script warns (lines 18, 19)."""
import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    device = torch.device("cuda")
    ds = TensorDataset(torch.randn(64, 3), torch.randint(0, 2, (64,)))
    loader = DataLoader(ds, batch_size=8, num_workers=2, pin_memory=True)
    model = torch.nn.Linear(3, 2).to(device)
    for _epoch in range(2):
        for step, (x, y) in enumerate(loader):
            x = x.to(torch.float16)            # a dtype conversion: not a copy to the device
            model(x.float().to(device, non_blocking=True))
            del x, y, step
        for batch in loader:
            inputs, labels = batch
            inputs = batch[0].to(device)
            labels = batch[1].cuda()
            model(inputs), labels


if __name__ == "__main__":
    main()
