// A syntax error in the very first lines (no headers included, so that the compiler fails at once).
int add(int a, int b) {
  int c = a + b
  return c;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("add", &add); }
