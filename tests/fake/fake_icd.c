/* A stand-in for a vendor's OpenCL driver installed without an ICD file (built as
 * libnvidia-opencl.so.1 for the tests): frugal finds it by dlopen and says how to list it; it
 * is never called. */
int fake_icd_present(void);

int fake_icd_present(void)
{
    return 1;
}
