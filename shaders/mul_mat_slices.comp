#version 450
// The sum of a split product's slices: y[t][r] = part[0][t][r] + part[1][t][r] + ... in slice
// order, fp32. mul_mat.coopmat splits a short batch's columns into slices, each workgroup row z
// summing its own columns into part[z] (runtime/model/mul_mat_coopmat.c); this adds them up.

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WORKGROUP = 128;

layout(std430, binding = 0) readonly buffer Part { float part[]; }; // [slices][n][rows] fp32
layout(std430, binding = 1) writeonly buffer Y { float y[]; };      // [n][y_stride] fp32, columns 0..rows-1 written

layout(push_constant) uniform Push {
    uint rows;     // rows of the product (workgroups of WORKGROUP rows in x)
    uint n;        // tokens (workgroup y)
    uint y_stride; // floats from y[t][0] to y[t + 1][0]
    uint slices;   // >= 1
} pc;

void main()
{
    uint r = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (r >= pc.rows || t >= pc.n) return;
    uint i = t * pc.rows + r, slice = pc.n * pc.rows;
    float sum = part[i];
    for (uint z = 1u; z < pc.slices; z++) sum += part[i + z * slice];
    y[t * pc.y_stride + r] = sum;
}
