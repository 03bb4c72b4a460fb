/* Loaded by stacks_test.cpp with dlopen(); stripped after the build (no .symtab), so hidden_work() has no
   name anywhere in the file. */
__attribute__((noinline)) static int hidden_work(int x) {
  __asm__ volatile("" ::: "memory");
  return x * 3 + 1;
}

int (*txray_probe_hidden(void))(int) { return hidden_work; }
int txray_probe_exported(int x) { return hidden_work(x) + 1; }
