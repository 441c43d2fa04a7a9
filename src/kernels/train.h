/* rdmaps kernels: single-process trainer, `rdmaps train ...`. */
#ifndef RDMAPS_KERNELS_TRAIN_H
#define RDMAPS_KERNELS_TRAIN_H

/* argv[0] = "train".  Flags: --model=mlp|lstm --data_dir=DIR --epochs=N
 * --batch_size=B --learning_rate=LR --threads=T --hidden_units=H --seed=S
 * --optimizer=adam|sgd|momentum --loss=sum|mean.  Returns the process exit code
 * (0 ok, 1 runtime failure, 2 usage error). */
int rdm_train_main(int argc, char **argv);

#endif
