/* rng.h - the seeded pseudo-random numbers behind every shuffle: keys are
 * mixed with splitmix64 (Steele, Lea, Flood 2014), the stream is xoshiro256**
 * (Blackman, Vigna 2018), bounded draws use Lemire's unbiased multiply-shift
 * rejection (2019), and permutations are Fisher-Yates. Everything is a pure
 * function of its key, so a plan is reproducible on any machine. Internal. */
#ifndef RF_RNG_H
#define RF_RNG_H

#include <stdint.h>

typedef struct rf_rng {
	uint64_t s[4];
} rf_rng;

/* splitmix64's finaliser: a bijective avalanche of one 64-bit word. */
static inline uint64_t rf_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* splitmix64 as a stream: the next word of the sequence whose state is *s
 * (the reference generator: *s advances by the golden gamma, the word is its
 * finaliser). For small jitter draws where xoshiro's state is not needed. */
static inline uint64_t rf_splitmix64(uint64_t *s)
{
	uint64_t r = rf_mix64(*s);
	*s += 0x9e3779b97f4a7c15ull;
	return r;
}

/* Seeds a stream from a key of (seed, tag, a, b, c): each word is folded in
 * through a full avalanche, so keys differing in any bit give unrelated streams. */
static inline void rf_rng_init(rf_rng *r, uint64_t seed, uint64_t tag, uint64_t a, uint64_t b,
                               uint64_t c)
{
	uint64_t h = rf_mix64(seed);
	h = rf_mix64(h ^ tag);
	h = rf_mix64(h ^ a);
	h = rf_mix64(h ^ b);
	h = rf_mix64(h ^ c);
	for (int i = 0; i < 4; i++) {
		h += 0x9e3779b97f4a7c15ull;
		r->s[i] = rf_mix64(h);
	}
}

static inline uint64_t rf_rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t rf_rng_next(rf_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rf_rotl64(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rf_rotl64(s[3], 45);
	return out;
}

/* Uniform in [0, n), n >= 1, without modulo bias. */
static inline uint64_t rf_rng_below(rf_rng *r, uint64_t n)
{
	__uint128_t m = (__uint128_t)rf_rng_next(r) * n;
	uint64_t low = (uint64_t)m;
	if (low < n) {
		uint64_t threshold = -n % n;
		while (low < threshold) {
			m = (__uint128_t)rf_rng_next(r) * n;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

/* Fisher-Yates over u32 values. */
static inline void rf_rng_shuffle_u32(rf_rng *r, uint32_t *v, uint64_t n)
{
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = rf_rng_below(r, i);
		uint32_t t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

#endif
