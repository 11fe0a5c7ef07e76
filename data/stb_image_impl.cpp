// The one translation unit that compiles stb's image decoder, encoder and resizer (header-only libraries from
// Debian's libstb-dev). Everything else calls them through data/image_codec.h.
//
// The decoder is limited to PNG and BMP (JPEG is decoded by libjpeg-turbo, data/jpeg_decoder.h: stb 2.27's
// JPEG decoder reads out of bounds on a scan that ends early) and to 16384 pixels a side: less code fed with
// untrusted bytes, and no multi-gigabyte allocation from a forged header. Encoding JPEG stays with stb.

#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STBI_MAX_DIMENSIONS (1 << 14)
#define STBI_NO_STDIO  // we read files ourselves, with checked reads
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>

#define STBI_WRITE_NO_STDIO
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb_image_resize.h>
