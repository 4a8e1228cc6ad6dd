void reference(const float* img, const float* filt, float* out, int h, int w) {
    for (int r = 0; r < h; ++r) {
        for (int c = 0; c < w; ++c) {
            float s = 0.0f;
            for (int dr = -1; dr <= 1; ++dr) {
                for (int dc = -1; dc <= 1; ++dc) {
                    int rr = r + dr, cc = c + dc;
                    if (rr >= 0 && rr < h && cc >= 0 && cc < w) {
                        s += filt[(dr + 1) * 3 + (dc + 1)] * img[rr * w + cc];
                    }
                }
            }
            out[r * w + c] = s;
        }
    }
}
