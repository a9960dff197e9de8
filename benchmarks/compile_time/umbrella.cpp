// Compile-time probe: the umbrella header and nothing else.
#include <mixprec/mixprec.hpp>

int main() { return 0; }
