/* How fast this CPU protects traffic: the bytes per second one core seals and opens (each byte
 * once sealed and once opened, in frame.h's pieces, through secure.h's own streams). Every
 * byte a node and the coordinator exchange costs this much CPU, taken from training where
 * machines share cores; `frugal info` prints it, the cluster benchmark bounds its efficiency
 * by it. */
#ifndef FRUGAL_NETIO_SECURE_SPEED_H
#define FRUGAL_NETIO_SECURE_SPEED_H

/* Measured for about `seconds` of this process's CPU time (call it with one thread running)
 * with AES-256-GCM (aes) or XChaCha20-Poly1305: bytes per CPU second, 0 when this CPU lacks
 * AES-NI (aes), or -1 when libsodium cannot start or a piece fails to open. */
double secure_speed(int aes, double seconds);

#endif
