"""HTCondor's "DAG Creation and Submission" tutorial, the DAG-building part,
with only the import lines changed: a Mandelbrot image cut into tiles, one
job per tile (a layer with one VARS entry per tile) and a montage job that
waits for all of them.  It writes the DAG directory and shows the DAG file;
submitting it is ``htcondor.Submit.from_dag(str(dag_file))`` and
``schedd.submit`` (DAGMan runs it).
"""

import itertools
import shutil
from pathlib import Path

import jobledger as htcondor
from jobledger import dags

tile_description = htcondor.Submit(
    executable='goatbrot',
    arguments='-i 10000 -c $(x),$(y) -w $(w) -s 500,500 -o tile_$(tile_x)-$(tile_y).ppm',
    log='mandelbrot.log',
    output='goatbrot.out.$(tile_x)_$(tile_y)',
    error='goatbrot.err.$(tile_x)_$(tile_y)',
    request_cpus='1',
    request_memory='128MB',
    request_disk='1GB',
)


def make_tile_vars(num_tiles_per_side, width=3):
    width_per_tile = width / num_tiles_per_side
    centers = [width_per_tile * (n + 0.5 - (num_tiles_per_side / 2)) for n in range(num_tiles_per_side)]
    vars = []
    for (tile_y, y), (tile_x, x) in itertools.product(enumerate(centers), repeat=2):
        vars.append(dict(w=width_per_tile, x=x, y=-y,
                         tile_x=str(tile_x).rjust(5, '0'), tile_y=str(tile_y).rjust(5, '0')))
    return vars


def make_montage_description(tile_vars):
    num_tiles_per_side = int(len(tile_vars) ** .5)
    input_files = [f'tile_{d["tile_x"]}-{d["tile_y"]}.ppm' for d in tile_vars]
    return htcondor.Submit(
        executable='/usr/bin/montage',
        arguments=f'{" ".join(input_files)} -mode Concatenate '
                  f'-tile {num_tiles_per_side}x{num_tiles_per_side} mandelbrot.png',
        transfer_input_files=', '.join(input_files),
        log='mandelbrot.log',
        output='montage.out',
        error='montage.err',
        request_cpus='1',
        request_memory='128MB',
        request_disk='1GB',
    )


num_tiles_per_side = 2
tile_vars = make_tile_vars(num_tiles_per_side)

dag = dags.DAG()
tile_layer = dag.layer(name='tile', submit_description=tile_description, vars=tile_vars)
montage_layer = tile_layer.child_layer(name='montage', submit_description=make_montage_description(tile_vars))

print(dag.describe())

dag_dir = (Path.cwd() / 'mandelbrot-dag').absolute()
shutil.rmtree(dag_dir, ignore_errors=True)
dag_file = dags.write_dag(dag, dag_dir)

print(f'DAG directory: {dag_dir}')
print(f'DAG description file: {dag_file}')
print(dag_file.read_text(), end='')
