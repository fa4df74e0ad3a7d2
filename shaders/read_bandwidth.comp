#version 450
// Streaming read of a buffer, 16 bytes per load, grid-stride: measures the device's read
// bandwidth, the roofline every benchmark quotes. Each invocation XORs what it reads and
// writes the result only if it equals a value the host never passes, so the loads stay live.

layout(local_size_x_id = 0) in;                 // spec 0: workgroup size

layout(std430, binding = 0) readonly buffer Src { uvec4 src[]; };   // [n_vec4] the data read
layout(std430, binding = 1) writeonly buffer Sink { uint sink[]; }; // [1] written (almost) never

layout(push_constant) uniform Push {
    uint n_vec4;   // number of 16-byte elements to read
    uint magic;    // a value the XOR never equals in practice
} pc;

void main()
{
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uvec4 acc = uvec4(0u);
    uint i = gl_GlobalInvocationID.x;
    for (; i + 3u * stride < pc.n_vec4; i += 4u * stride) {
        acc ^= src[i];
        acc ^= src[i + stride];
        acc ^= src[i + 2u * stride];
        acc ^= src[i + 3u * stride];
    }
    for (; i < pc.n_vec4; i += stride) acc ^= src[i];
    uint r = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if (r == pc.magic) sink[0] = r;
}
