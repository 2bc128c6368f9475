"""Spec test 3: the Hadamard matrix and the block transform against scipy and hadamard-transform."""

import numpy as np
import pytest
import scipy.linalg
import torch
from hadamard_transform import hadamard_transform
from quest_qat import block_hadamard, hadamard_matrix


@pytest.mark.parametrize("n", [1, 2, 8, 128, 1024, 4096])
def test_matrix_equals_scipy(n):
    h = hadamard_matrix(n, torch.float64)
    ref = scipy.linalg.hadamard(n) / np.sqrt(n)
    np.testing.assert_array_equal(h.numpy(), ref)


@pytest.mark.parametrize("n", [1, 2, 8, 128, 1024])
def test_matrix_is_orthogonal_in_float32(n):
    eye = hadamard_matrix(n) @ hadamard_matrix(n).T
    assert (eye - torch.eye(n)).abs().max().item() <= 1e-6


@pytest.mark.parametrize(("rows", "k", "block"), [(3, 256, 128), (5, 384, 128), (1, 64, 16)])
def test_block_equals_dense_block_diag(rows, k, block, gen):
    x = torch.randn(rows, k, generator=gen)
    dense = torch.block_diag(*[hadamard_matrix(block)] * (k // block))
    assert (block_hadamard(x, block) - x @ dense).abs().max().item() <= 1e-6


def test_block_equals_hadamard_transform_peer(gen):
    x = torch.randn(7, 3, 128, generator=gen)
    ours = block_hadamard(x.reshape(7, 384), 128).reshape(7, 3, 128)
    peer = hadamard_transform(x.reshape(-1, 128)).reshape(7, 3, 128)  # normalised, Sylvester order
    assert (ours - peer).abs().max().item() <= 1e-5


def test_block_gradcheck(gen):
    x = torch.randn(2, 32, dtype=torch.float64, generator=gen, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: block_hadamard(t, 16), (x,))


def test_block_keeps_dtype_and_is_involution(gen):
    x = torch.randn(4, 256, generator=gen).half()
    y = block_hadamard(x)
    assert y.dtype == torch.float16
    assert (block_hadamard(block_hadamard(x.double())) - x.double()).abs().max() < 1e-12
