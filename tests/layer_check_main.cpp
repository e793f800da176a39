// The program of each layer's link check (sbx_layer in CMakeLists.txt): it
// does nothing; what matters is that every object of its layer, linked whole,
// finds every symbol it calls in the layers below it.
int main() { return 0; }
