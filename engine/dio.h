/* dio.h - the loader's read buffers registered with the loop's ring
 * (direct_io on or auto), so that its local reads go as READ_FIXED. Pool
 * buffers come and go: each is registered on the loop thread when a read
 * first gets it, and its registration is dropped before the pool unmaps it
 * (the pool's hook, any thread, queues it; the loop thread unregisters it
 * before it registers or issues anything, and at every tick). */
#ifndef RF_DIO_H
#define RF_DIO_H

#include <stdint.h>

typedef struct rf_engine rf_engine;
typedef struct rf_dio rf_dio;

/* Loop thread, after the fetch layer exists: e->dio (NULL where direct_io
 * is off or memory is short: plain reads). */
void rf_dio_start(rf_engine *e);
/* Loop thread, before the read into [base, base + bytes) is issued. */
void rf_dio_buffer(rf_engine *e, void *base, uint64_t bytes);
/* Loop thread, every tick: registrations of unmapped buffers dropped. */
void rf_dio_tick(rf_engine *e);
/* Loop thread, before the fetch layer goes: the hook removed, e->dio freed. */
void rf_dio_stop(rf_engine *e);

#endif
