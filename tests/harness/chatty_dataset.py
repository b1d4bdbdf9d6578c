"""A --dataset module that prints on import, in its factory and in every worker, through Python and through fd 1."""

import os

import torch

print("chatty: imported")  # a module that prints on import (logging set up badly, a banner)
os.write(1, b"chatty: raw write to fd 1 on import\n")


class Chatty(torch.utils.data.Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, idx):
        if idx == 0:
            print(f"chatty: worker {os.getpid()} loads sample 0", flush=True)
            os.write(1, b"chatty: raw write from a worker\n")
        return torch.zeros(3, 8, 8), idx


def make():
    print("chatty: factory called")
    return Chatty()
