"""QuEST kernels: the plain PyTorch reference beside the Triton kernels, one folder per op."""
