// mixprec::optim: optimizers on float32 arrays that reproduce PyTorch 1.13's torch.optim.SGD
// and torch.optim.AdamW bit for bit (docs/optim.md), with saved states in the library's frame.
#pragma once

#include "adamw.hpp"
#include "sgd.hpp"
