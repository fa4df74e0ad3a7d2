// Flat indices over a 2-D grid of workgroups: dispatches wider than the guaranteed 65535
// workgroups in x spill into y (runtime/ops.c picks the grid).
#ifndef OSCAR_GRID_GLSL
#define OSCAR_GRID_GLSL

// This workgroup's index in x-major order.
uint grid_group() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

// This invocation's index in x-major order (1-D workgroups).
uint grid_invocation() { return grid_group() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; }

#endif
