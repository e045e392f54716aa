#version 450
// The face's colour, unlit (c_examples/batch_cameras.c checks it byte for byte).
layout(location = 0) flat in vec3 colour;
layout(location = 0) out vec4 out_colour;

void main() {
    out_colour = vec4(colour, 1.0);
}
