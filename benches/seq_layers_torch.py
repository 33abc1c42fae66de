"""PyTorch eager timings of benches/seq_layers.dl's shapes (forward + backward).
Run: python benches/seq_layers_torch.py  (prints BENCH lines like the Kiln side)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch_timing import measure, report

torch.manual_seed(0)
T, B, I, H = 50, 32, 64, 128
x = torch.randn(T, B, I)
lstm, gru = nn.LSTM(I, H), nn.GRU(I, H)
report("lstm_torch", measure(lambda: lstm(x)[0].sum().backward()))
report("gru_torch", measure(lambda: gru(x)[0].sum().backward()))
N, L, E = 8, 512, 64
q, k, v = (torch.randn(N, L, E, requires_grad=True) for _ in range(3))
report("sdpa_torch", measure(lambda: F.scaled_dot_product_attention(q, k, v).sum().backward()))
report("sdpa_torch_causal",
       measure(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()))
