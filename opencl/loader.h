/* The OpenCL ICD loader (libOpenCL.so.1), loaded at run time: the same frugal binary runs where
 * no OpenCL is installed, and uses the devices where it is. Every OpenCL function frugal and
 * CLBlast call is defined in loader.c as a forwarder to the loader's, so nothing links against
 * libOpenCL. FRUGAL_OPENCL_LOADER names another library to load (a test hides the loader with
 * it). */
#ifndef FRUGAL_OPENCL_LOADER_H
#define FRUGAL_OPENCL_LOADER_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stddef.h>

/* Loads the library once; 0, or -1 with why it could not (the library name, dlerror's reason,
 * or the entry point missing). Later calls give the first answer. */
int ocl_load(char *why, size_t n);
/* "CL_OUT_OF_RESOURCES (-5)", for messages. */
const char *ocl_error_name(cl_int code);

#endif
