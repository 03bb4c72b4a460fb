/* A C program using the public header agent/include/txray/txray.h (tests/e2e/test_agent_c_api.py runs
 * it with and without the agent). Prints what each call returned; exits 0. */
#include <stdio.h>
#include <txray/txray.h>
#include <unistd.h>

int main(void) {
  int b = txray_begin("nightly import");
  int s1 = txray_step("parsed 1200 rows");
  int nested = txray_begin("inner");  /* one transaction at a time per thread: refused */
  usleep(2000);
  int s2 = txray_step("stored");
  int e = txray_end(0, NULL);
  int e2 = txray_end(0, NULL);  /* nothing left to end */
  int outside = txray_step("no transaction");
  int b2 = txray_begin("failing job");
  int e3 = txray_end(2, "disk full");
  printf("begin=%d step=%d nested=%d step=%d end=%d end_again=%d outside=%d begin2=%d end2=%d\n", b, s1, nested,
         s2, e, e2, outside, b2, e3);
  return 0;
}
