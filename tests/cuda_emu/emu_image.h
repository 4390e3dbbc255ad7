/*
 * emu_image.h - the module image the host CUDA emulator's stand-in NVRTC
 * gives as CUBIN or PTX and its stand-in driver loads: EMU_MAGIC, the
 * shared object's size (8 bytes, native order), the shared object.
 */
#ifndef TESSERA_TESTS_CUDA_EMU_IMAGE_H
#define TESSERA_TESTS_CUDA_EMU_IMAGE_H

#define EMU_MAGIC "TSEMU-SO"
#define EMU_HEADER 16

#endif
