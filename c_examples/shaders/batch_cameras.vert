#version 450
// The scene of c_examples/batch_cameras.c: a cube of side 1 at the origin, each face a
// colour of its own (+x red, -x cyan, +y green, -y magenta, +z blue, -z yellow), drawn
// with 36 vertices and no vertex buffer. The push constant is the camera.
layout(push_constant) uniform Camera {
    mat4 view_projection;
} camera;
layout(location = 0) flat out vec3 colour;

// Corner i has x = bit 0, y = bit 1, z = bit 2 (0: -0.5, 1: +0.5).
const int faces[36] = int[36](1, 3, 7, 1, 7, 5,  0, 2, 6, 0, 6, 4,  2, 3, 7, 2, 7, 6,
                              0, 1, 5, 0, 5, 4,  4, 5, 7, 4, 7, 6,  0, 1, 3, 0, 3, 2);
const vec3 colours[6] = vec3[6](vec3(1, 0, 0), vec3(0, 1, 1), vec3(0, 1, 0),
                                vec3(1, 0, 1), vec3(0, 0, 1), vec3(1, 1, 0));

void main() {
    int c = faces[gl_VertexIndex];
    colour = colours[gl_VertexIndex / 6];
    gl_Position = camera.view_projection * vec4(vec3(c & 1, (c >> 1) & 1, (c >> 2) & 1) - 0.5, 1.0);
}
