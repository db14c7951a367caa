// hiredis 0.14: the reader and the argv formatter are all Herald needs (its own socket runs on the event loop).
#ifndef HERALD_CHIREDIS_SHIM_H
#define HERALD_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>
#include <hiredis/read.h>
#endif
