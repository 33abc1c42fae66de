"""PyTorch reference for tests/dl/test_sdpa_nan.dl: scaled_dot_product_attention with NaN in
q, k or v (torch 2.15, CPU; run with /work/peers-venv/bin/python). Prints
[0.0, 0.0, 0.0, 0.0] / [nan x4] / [nan x4] [1.0 x4]."""
import torch, torch.nn.functional as F
q = torch.ones(1, 4, 8)
print(F.scaled_dot_product_attention(q * float('nan'), q, q)[0, :, 0].tolist())
k = torch.ones(1, 4, 8); k[0, 2, 0] = float('nan')
print(F.scaled_dot_product_attention(q, k, q)[0, :, 0].tolist())
v = torch.ones(1, 4, 8); v[0, 2, 0] = float('nan')
print(F.scaled_dot_product_attention(q, q, v)[0, :, 0].tolist(), F.scaled_dot_product_attention(q, q, v)[0, :, 1].tolist())
