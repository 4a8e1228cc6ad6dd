#include <cstdio>
#include "nothere.h"
__global__ void k() {}
